package recommend

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tailorhq/tailor/internal/propertytest"
)

// randomState feeds a state random samples, throttling, OOM kills and
// restarts over random times, with now and then a gap long enough to
// empty a window, and returns the time of the last event.
func randomState(rng *rand.Rand, r *Recommender) (*State, time.Time) {
	s := r.NewState()
	now := t0.Add(time.Duration(rng.Int64N(int64(24 * time.Hour))))
	for range rng.IntN(400) {
		switch k := rng.IntN(100); {
		case k < 2:
			now = now.Add(time.Duration(rng.Int64N(int64(72 * time.Hour))))
		case k < 5:
			s.RecordOOM(now, rng.Float64()*4*(1<<30))
		case k < 10:
			s.RecordThrottling(now, rng.Float64()*1.2, rng.Float64()*4)
		case k < 12:
			s.RecordRestart(now)
		default:
			s.AddSample(Sample{CPU: rng.Float64() * 4 * float64(rng.IntN(2)), Memory: rng.Float64() * 4 * (1 << 30)}, now)
		}
		now = now.Add(time.Duration(rng.Int64N(int64(10 * time.Minute))))
	}
	return s, now
}

var advisedAfter = []time.Duration{0, time.Second, 7 * time.Minute, 15 * time.Minute, 16 * time.Minute, time.Hour, 3 * time.Hour, 49 * time.Hour}

// advice is what s says at the times after now, to pods of several sizes
// changed at several times, reasons included.
func advice(s *State, rng *rand.Rand, now time.Time) []string {
	var out []string
	for _, after := range advisedAfter {
		at := now.Add(after)
		for _, changed := range []time.Time{{}, at.Add(-10 * time.Minute), at.Add(-20 * time.Minute)} {
			cur := Resources{CPU: rng.Float64() * 5, Memory: rng.Float64() * 5 * (1 << 30)}
			cur.MemoryLimit = cur.Memory * (1 + rng.Float64())
			rec := s.Recommend(cur, changed, at)
			advised := []Advice{rec.CPU, rec.Memory}
			if s.r.cfg.MemorySplit {
				advised = append(advised, rec.MemoryLimit)
			}
			for _, a := range advised {
				out = append(out, strings.Join([]string{a.Decision.String(), ftoa(a.Target), ftoa(a.Lower), ftoa(a.Upper), a.Reason()}, " "))
			}
		}
	}
	return out
}

func ftoa(v float64) string { return time.Duration(math.Float64bits(v)).String() }

func testRecommenders(t testing.TB) map[string]*Recommender {
	out := map[string]*Recommender{}
	for name, mutate := range map[string]func(*Config){
		"default":          func(*Config) {},
		"one value":        oneValue,
		"no stabilization": func(c *Config) { c.Stabilization = 0 },
		"short windows": func(c *Config) {
			c.CPUWindow, c.MemoryWindow, c.Stabilization = 2*time.Minute, time.Hour, 20*time.Second
		},
		"long windows": func(c *Config) { c.CPUWindow, c.MemoryWindow, c.Stabilization = 3*time.Hour, 7*24*time.Hour, time.Hour },
	} {
		cfg := DefaultConfig()
		mutate(&cfg)
		r, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = r
	}
	return out
}

// Restore(Marshal(s)) must advise exactly what s advises, now and later,
// and keep doing so after the same further events.
func TestRestoreRoundTrip(t *testing.T) {
	statesPerConfig := 1000
	if propertytest.Race {
		statesPerConfig = 200
	}
	for name, r := range testRecommenders(t) {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(name))))
			for i := range statesPerConfig {
				s, now := randomState(rng, r)
				b, err := s.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				got, err := r.Restore(b)
				if err != nil {
					t.Fatalf("state %d: %v", i, err)
				}
				seed := rng.Uint64()
				if diff := cmp.Diff(advice(s, rand.New(rand.NewPCG(seed, 0)), now), advice(got, rand.New(rand.NewPCG(seed, 0)), now)); diff != "" {
					t.Fatalf("state %d: restored advice (-original,+restored):\n%s", i, diff)
				}
				again, _ := got.MarshalBinary()
				if !bytes.Equal(b, again) {
					t.Fatalf("state %d: re-encoding differs", i)
				}
				later := now.Add(3 * time.Minute)
				for _, st := range []*State{s, got} {
					st.AddSample(Sample{CPU: 0.2, Memory: 1 << 28}, later)
					st.RecordThrottling(later, 0.5, 0.1)
				}
				if diff := cmp.Diff(advice(s, rand.New(rand.NewPCG(seed, 1)), later), advice(got, rand.New(rand.NewPCG(seed, 1)), later)); diff != "" {
					t.Fatalf("state %d: advice after more events (-original,+restored):\n%s", i, diff)
				}
			}
		})
	}
}

// A state restored under other windows keeps every peak the old state
// still held and the new window still covers, and does not lower before it
// knows the new stabilization window.
func TestRestoreRebucketsConservatively(t *testing.T) {
	recs := testRecommenders(t)
	rng := rand.New(rand.NewPCG(7, 7))
	checked := 0
	for from, rFrom := range recs {
		for to, rTo := range recs {
			if from == to {
				continue
			}
			for i := range 200 {
				s := rFrom.NewState()
				now := t0
				type smp struct {
					at       time.Time
					cpu, mem float64
				}
				var fed []smp
				for range 50 + rng.IntN(200) {
					x := smp{at: now, cpu: rng.Float64() * 4, mem: (1 + rng.Float64()) * (1 << 30)}
					s.AddSample(Sample{CPU: x.cpu, Memory: x.mem}, x.at)
					fed = append(fed, x)
					now = now.Add(time.Duration(1+rng.Int64N(int64(5*time.Minute))) / time.Second * time.Second)
				}
				last := fed[len(fed)-1].at
				b, _ := s.MarshalBinary()
				got, err := rTo.Restore(b)
				if err != nil {
					t.Fatalf("%s to %s: %v", from, to, err)
				}
				for _, after := range advisedAfter {
					at := last.Add(after)
					for _, x := range fed {
						// Held by the old window when encoded, and inside
						// what the new window covers at at.
						cpuKept := x.at.After(last.Add(-(peakBuckets-1)*rFrom.cpuBucket)) && x.at.After(at.Add(-(peakBuckets-1)*rTo.cpuBucket))
						memKept := x.at.After(last.Add(-(peakBuckets-1)*rFrom.memBucket)) && x.at.After(at.Add(-(peakBuckets-1)*rTo.memBucket))
						if p := got.cpu.peak(at, rTo.cpuBucket); cpuKept && p < float64(float32(x.cpu)) {
							t.Fatalf("%s to %s, state %d: cpu peak at %v is %v, lost %v seen at %v", from, to, i, at, p, x.cpu, x.at)
						}
						if p := got.mem.peak(at, rTo.memBucket); memKept && p < float64(float32(x.mem)) {
							t.Fatalf("%s to %s, state %d: memory peak at %v is %v, lost %v seen at %v", from, to, i, at, p, x.mem, x.at)
						}
					}
					checked++
				}
				if stab := rTo.cfg.Stabilization; stab > rFrom.cfg.Stabilization {
					// The old window did not reach back a whole new one:
					// an oversized pod must wait, not lower at once.
					rec := got.Recommend(Resources{CPU: 100, Memory: 100 << 30}, time.Time{}, last)
					if rec.CPU.Decision == Lower || rec.Memory.Decision == Lower {
						t.Fatalf("%s to %s, state %d: lowered right after restore: %s; %s", from, to, i, rec.CPU.Reason(), rec.Memory.Reason())
					}
				}
			}
		}
	}
	t.Logf("%d restored states checked at %d times each", checked/len(advisedAfter), len(advisedAfter))
}

func TestRestoreErrors(t *testing.T) {
	r := testRecommenders(t)["default"]
	s, _ := randomState(rand.New(rand.NewPCG(3, 3)), r)
	valid, _ := s.MarshalBinary()
	with := func(edit func(b []byte) []byte) []byte { return edit(bytes.Clone(valid)) }
	f32 := func(off int, v float32) func([]byte) []byte {
		return func(b []byte) []byte {
			bits := math.Float32bits(v)
			b[off], b[off+1], b[off+2], b[off+3] = byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24)
			return b
		}
	}
	const firstBucket = 1 + 3*4 + 8
	cases := map[string]struct {
		in      []byte
		wantErr string
	}{
		"empty":            {in: nil, wantErr: "empty input"},
		"wrong version":    {in: with(func(b []byte) []byte { b[0] = 3; return b }), wantErr: "unsupported encoding version 3"},
		"truncated":        {in: valid[:len(valid)-1], wantErr: "604 bytes, want 605 for version 2"},
		"oversized":        {in: append(bytes.Clone(valid), 0), wantErr: "606 bytes, want 605"},
		"version 1 length": {in: with(func(b []byte) []byte { b[0] = 1; return b }), wantErr: "605 bytes, want 497 for version 1"},
		"NaN peak":         {in: with(f32(firstBucket, float32(math.NaN()))), wantErr: "want a finite value"},
		"infinite peak":    {in: with(f32(firstBucket, float32(math.Inf(1)))), wantErr: "want a finite value"},
		"negative peak":    {in: with(f32(firstBucket, -1)), wantErr: "want a finite value"},
		"zero bucket size": {in: with(func(b []byte) []byte { copy(b[1:5], []byte{0, 0, 0, 0}); return b }), wantErr: "bucket sizes"},
		"negative time":    {in: with(func(b []byte) []byte { b[1+12+4*(8+96)+7] = 0x80; return b }), wantErr: "time 0 is"},
		"negative jitter":  {in: with(f32(encodedSizeV1-4, -1)), wantErr: "value 4 is -1"},
		"NaN profile hour": {in: with(f32(len(valid)-4, float32(math.NaN()))), wantErr: "daily profile hour 23"},
		"profile days":     {in: with(f32(encodedSizeV1+8, 1.5)), wantErr: "want a whole number"},
		"empty profile, days": {in: with(func(b []byte) []byte {
			clear(b[encodedSizeV1 : encodedSizeV1+8])
			clear(b[encodedSizeV1+12:])
			return f32(encodedSizeV1+8, 2)(b)
		}), wantErr: "empty daily profile has seen 2 days"},
		"window start":       {in: with(func(b []byte) []byte { b[1+12+7] = 0x80; return b }), wantErr: "window 0 starts at"},
		"needed, no buckets": {in: with(func(b []byte) []byte { copy(b[9:13], []byte{0, 0, 0, 0}); return b }), wantErr: "without a stabilization bucket"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := r.Restore(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Restore() error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
	if _, err := r.Restore(valid); err != nil {
		t.Errorf("the unedited encoding: %v", err)
	}
}

// FuzzRestore: whatever the input, Restore returns an error or a state
// that encodes to bytes it restores exactly, and that can advise.
func FuzzRestore(f *testing.F) {
	recs := testRecommenders(f)
	rng := rand.New(rand.NewPCG(5, 5))
	for _, r := range recs {
		s, _ := randomState(rng, r)
		b, _ := s.MarshalBinary()
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte{})
	f.Add([]byte{encodingVersion})
	f.Fuzz(func(t *testing.T, b []byte) {
		for name, r := range recs {
			s, err := r.Restore(b)
			if err != nil {
				continue
			}
			enc, err := s.MarshalBinary()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			again, err := r.Restore(enc)
			if err != nil {
				t.Fatalf("%s: restoring a re-encoded state: %v", name, err)
			}
			if enc2, _ := again.MarshalBinary(); !bytes.Equal(enc, enc2) {
				t.Fatalf("%s: re-encoding is not stable", name)
			}
			now := time.Unix(max(s.lastSample, s.lastMemAt, s.cpu.headStart), 0)
			for _, after := range advisedAfter {
				rec := s.Recommend(Resources{CPU: 1, Memory: 1 << 30}, time.Time{}, now.Add(after))
				_, _ = rec.CPU.Reason(), rec.Memory.Reason()
			}
		}
	})
}

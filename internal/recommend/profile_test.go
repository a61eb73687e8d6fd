package recommend

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

// The daily profile's tests size memory as one value, which the profile
// sizes alone; with the split (the default) it sizes the limit, which
// TestProfileInvariants covers too.

// A daily peak is learnt: after a few days memory is raised ahead of the
// peak's hour and lowered between the peaks, where the 48-hour window would
// have held the peak all day.
func TestDailyPeakRaisedAheadAndLoweredBetween(t *testing.T) {
	s := newState(t, oneValue)
	now, p := t0, &pod{}
	at := map[int]float64{} // hour of day -> memory in force, last day
	for day := range 6 {
		for range 24 * 12 {
			h := now.Hour()
			mem := 200.0
			if h == 14 {
				mem = 2000
			}
			feed(s, &now, p, 1, 0.1, mem)
			if day == 5 && now.Minute() == 0 {
				at[now.Hour()] = p.cur.Memory / mib
			}
		}
	}
	// at[h] is what was in force at h:00, for the sample taken then.
	if at[14] < 2000 {
		t.Errorf("at 14:00 on day 6 memory is %v MiB, below the daily peak of 2000 MiB: not raised ahead", at[14])
	}
	if at[4] >= 1000 {
		t.Errorf("at 04:00 on day 6 memory is %v MiB: the daily peak is held between its hours", at[4])
	}
}

// A one-off peak is held for MemoryHold, then only around its hour of the
// day, not for the whole 48 hours.
func TestOneOffPeakHeldForHold(t *testing.T) {
	s := newState(t, oneValue)
	now, p := t0, &pod{}
	feed(s, &now, p, 4*24*12, 0.1, 200) // four steady days: the profile is trusted
	feed(s, &now, p, 1, 0.1, 2000)      // a one-off peak at 00:00
	feed(s, &now, p, 4*12-1, 0.1, 200)
	if p.cur.Memory < 2000*mib {
		t.Fatalf("%v MiB in force within MemoryHold of a 2000 MiB peak", p.cur.Memory/mib)
	}
	feed(s, &now, p, 6*12, 0.1, 200) // to 10:00
	if p.cur.Memory >= 1000*mib {
		t.Errorf("%v MiB in force 10 hours after a one-off peak: still held", p.cur.Memory/mib)
	}
	feed(s, &now, p, 14*12, 0.1, 200) // to 23:55, the hour before the peak's
	if p.cur.Memory < 1900*mib {
		t.Errorf("%v MiB in force the hour before the peak's hour the next day: not raised ahead", p.cur.Memory/mib)
	}
}

// Trust in the profile grows with the days seen: until ProfileDays the
// 48-hour peak is held in part.
func TestProfileTrustGrowsWithDays(t *testing.T) {
	held := func(days int) float64 {
		s := newState(t, oneValue)
		now, p := t0, &pod{}
		feed(s, &now, p, 1, 0.1, 2000) // a peak at 00:00 on day 1
		feed(s, &now, p, days*24*12-12*12-1, 0.1, 200)
		// noon, half a day from the peak's hour
		return s.Recommend(p.cur, p.changed, now).Memory.Lower / mib
	}
	one, two, four := held(1), held(2), held(4)
	if !(one > two && two > four) {
		t.Errorf("needed memory at noon after 1, 2 and 4 days: %v, %v, %v MiB, want it falling as trust grows", one, two, four)
	}
	if one < 2000 {
		t.Errorf("needed memory after 1 day: %v MiB, want the 48h peak of 2000 MiB held", one)
	}
}

// Over random workloads, with a controller applying every decision: the
// memory kill line in force (the one value, or with the split the limit)
// never falls below the working set plus the configured margin, nor below
// any sample of the last MemoryHold; with the split the request is never
// above the limit; nothing is lowered once samples stop; the profile never
// holds more than was seen; and the encoded state stays its fixed size.
func TestProfileInvariants(t *testing.T) {
	for name, mutate := range map[string]func(*Config){"one value": oneValue, "split (default)": nil} {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig()
			if mutate != nil {
				mutate(&cfg)
			}
			r, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			profileInvariants(t, r)
		})
	}
}

func profileInvariants(t *testing.T, r *Recommender) {
	cfg := r.Config()
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		s := r.NewState()
		now := t0.Add(time.Duration(rng.Int64N(int64(24 * time.Hour))))
		p := &pod{}
		killLine := func() float64 {
			if cfg.MemorySplit {
				return p.cur.MemoryLimit
			}
			return p.cur.Memory
		}
		base := 50 + rng.Float64()*2000
		peakHour, peak := rng.IntN(24), base*(1+rng.Float64()*10)
		type seen struct {
			at  time.Time
			mem float64
		}
		var recent []seen
		var highest float64
		for i := range 12 * 24 * 10 {
			if rng.IntN(2000) == 0 {
				now = now.Add(time.Duration(rng.Int64N(int64(60 * time.Hour))))
			}
			mem := base * (1 + 0.2*rng.Float64())
			if now.Hour() == peakHour && rng.IntN(4) > 0 {
				mem = peak
			}
			if rng.IntN(500) == 0 {
				mem = peak * 3 // a one-off
			}
			if limit := killLine(); limit > 0 && mem*mib > limit {
				s.RecordOOM(now, limit)
				highest = max(highest, limit*cfg.OOMBump)
			}
			s.AddSample(Sample{CPU: 0.1, Memory: mem * mib}, now)
			highest = max(highest, mem*mib)
			recent = append(recent, seen{now, mem * mib})
			rec := s.Recommend(p.cur, p.changed, now)
			if next := (Resources{CPU: rec.CPU.Target, Memory: rec.Memory.Target, MemoryLimit: rec.MemoryLimit.Target}); next != p.cur {
				p.cur, p.changed = next, now
			}
			// A raise smaller than MinChange waits, unless the working set
			// is within NearLimit of what is in force.
			limit := killLine()
			floor := mem*mib + max(mem*mib*cfg.MemoryHeadroom, cfg.MemoryMinMargin)
			if limit*(1+cfg.MinChange) < floor*(1-1e-6) || limit < mem*mib*(1+cfg.MemoryHeadroom)*(1-1e-6) {
				t.Fatalf("seed %d sample %d: %v MiB in force, below the working set %v MiB plus margin", seed, i, limit/mib, mem)
			}
			if cfg.MemorySplit && p.cur.Memory > limit {
				t.Fatalf("seed %d sample %d: request %v MiB above the limit %v MiB", seed, i, p.cur.Memory/mib, limit/mib)
			}
			for len(recent) > 0 && now.Sub(recent[0].at) > cfg.MemoryHold {
				recent = recent[1:]
			}
			for _, x := range recent {
				if limit < x.mem {
					t.Fatalf("seed %d sample %d: %v MiB in force, below %v MiB seen %v ago", seed, i, limit/mib, x.mem/mib, now.Sub(x.at))
				}
			}
			for h, v := range s.memDaily.peaks {
				if float64(v) > highest*(1+1e-6) {
					t.Fatalf("seed %d: profile hour %d holds %v, more than the %v ever seen", seed, h, v, highest)
				}
			}
			if rng.IntN(100) == 0 {
				// Samples stop: nothing is lowered, whatever is in force.
				later := now.Add(r.gapLimitDuration() + time.Second + time.Duration(rng.Int64N(int64(72*time.Hour))))
				big := Resources{CPU: 100, Memory: 1 << 50, MemoryLimit: 1 << 50}
				if rec := s.Recommend(big, time.Time{}, later); rec.Memory.Decision == Lower || rec.CPU.Decision == Lower {
					t.Fatalf("seed %d: lowered %v after samples stopped: %s", seed, later.Sub(now), rec.Memory.Reason())
				}
			}
			if b, _ := s.MarshalBinary(); len(b) != encodedSize {
				t.Fatalf("seed %d: encoded state is %d bytes, want %d", seed, len(b), encodedSize)
			}
			now = now.Add(step)
		}
	}
}

func (r *Recommender) gapLimitDuration() time.Duration {
	return time.Duration(r.gapLimit()) * time.Second
}

// The state a container costs, in memory and in its checkpoint, stays
// within 1 KiB with the daily profile.
func TestEncodedSizeBound(t *testing.T) {
	if encodedSize > 1024 {
		t.Errorf("an encoded state is %d bytes, want at most 1 KiB", encodedSize)
	}
	if got := unsafe.Sizeof(dailyProfile{}); got > 128 {
		t.Errorf("the daily profile is %d bytes, want at most 128", got)
	}
	for name, r := range testRecommenders(t) {
		s, _ := randomState(rand.New(rand.NewPCG(9, 9)), r)
		if b, _ := s.MarshalBinary(); len(b) != encodedSize {
			t.Errorf("%s: encoded state is %d bytes, want %d", name, len(b), encodedSize)
		}
	}
}

// A version 1 checkpoint, written before the daily profile, restores and
// advises exactly what the code that wrote it advised, under that code's
// config (memory as one value): with an empty profile the 48-hour peak is
// held until the profile has seen enough days.
func TestRestoreVersion1(t *testing.T) {
	b, last, want := readRecorded(t, "testdata/state-v1.txt", 1)
	s := restore(t, oneValue, b)
	if diff := cmp.Diff(want, recordedAdvice(s, last, want)); diff != "" {
		t.Errorf("advice after restoring version 1 (-written,+restored):\n%s", diff)
	}
	enc, _ := s.MarshalBinary()
	if enc[0] != encodingVersion || len(enc) != encodedSize {
		t.Errorf("re-encoded as version %d, %d bytes; want version %d, %d bytes", enc[0], len(enc), encodingVersion, encodedSize)
	}
	if !s.memDaily.empty() {
		t.Errorf("a version 1 state restored with a profile: %+v", s.memDaily)
	}
}

// A version 2 checkpoint written before MemorySplit was the default (issue
// 26 added no state) restores and advises exactly what the code that wrote
// it advised, under that code's config.
func TestRestoreVersion2BeforeTheSplit(t *testing.T) {
	b, last, want := readRecorded(t, "testdata/state-v2.txt", encodingVersion)
	s := restore(t, oneValue, b)
	if diff := cmp.Diff(want, recordedAdvice(s, last, want)); diff != "" {
		t.Errorf("advice after restoring version 2 (-written,+restored):\n%s", diff)
	}
	if enc, _ := s.MarshalBinary(); !bytes.Equal(enc, b) {
		t.Errorf("re-encoding a version 2 state changed it")
	}
}

// The recorded checkpoints restore under today's default, which reads the
// same state as a request and a limit: each advice is a number within the
// bounds, the limit advised is never below the request nor below the one
// value the old config advises from the same state (the split lowers the
// request, not the kill line), and CPU is advised as before.
func TestRecordedStatesUnderTheSplit(t *testing.T) {
	for _, tc := range []struct {
		path    string
		version byte
	}{{"testdata/state-v1.txt", 1}, {"testdata/state-v2.txt", encodingVersion}} {
		b, last, lines := readRecorded(t, tc.path, tc.version)
		split, old := restore(t, nil, b), restore(t, oneValue, b)
		if !split.r.cfg.MemorySplit {
			t.Fatal("DefaultConfig has MemorySplit off")
		}
		for _, l := range lines {
			after, _ := strconv.ParseInt(strings.Fields(l)[0], 10, 64)
			at := time.Unix(last+after, 0)
			cur := Resources{CPU: 2, Memory: 4 << 30, MemoryLimit: 4 << 30}
			rec := split.Recommend(cur, time.Time{}, at)
			for name, a := range map[string]Advice{"cpu": rec.CPU, "memory": rec.Memory, "memory limit": rec.MemoryLimit} {
				if math.IsNaN(a.Target) || a.Target <= 0 || a.Lower > a.Target || a.Reason() == "" {
					t.Errorf("%s, %ds after: %s advice %+v (%s)", tc.path, after, name, a, a.Reason())
				}
			}
			if rec.MemoryLimit.Target < rec.Memory.Target || rec.MemoryLimit.Lower < rec.Memory.Lower {
				t.Errorf("%s, %ds after: limit %v (least %v) below the request %v (least %v)", tc.path, after,
					rec.MemoryLimit.Target, rec.MemoryLimit.Lower, rec.Memory.Target, rec.Memory.Lower)
			}
			if one := old.Recommend(cur, time.Time{}, at).Memory; rec.MemoryLimit.Lower < one.Lower {
				t.Errorf("%s, %ds after: the split's limit needs %v, less than the one value's %v", tc.path, after, rec.MemoryLimit.Lower, one.Lower)
			}
			if rec.CPU != old.Recommend(cur, time.Time{}, at).CPU {
				t.Errorf("%s, %ds after: cpu advice differs with the split", tc.path, after)
			}
		}
	}
}

// readRecorded reads a checkpoint recorded in testdata: the encoded state
// of the given version, the Unix time of its last event, and the advice
// lines its writer printed.
func readRecorded(t *testing.T, path string, version byte) (b []byte, last int64, advice []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var lines []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if l := sc.Text(); !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	size := encodedSize
	if version == 1 {
		size = encodedSizeV1
	}
	if b, err = hex.DecodeString(lines[0]); err != nil || len(b) != size || b[0] != version {
		t.Fatalf("%s: %d bytes of version %d (%v), want %d of version %d", path, len(b), b[0], err, size, version)
	}
	if last, err = strconv.ParseInt(lines[1], 10, 64); err != nil {
		t.Fatal(err)
	}
	return b, last, lines[2:]
}

// restore restores b under DefaultConfig changed by mutate.
func restore(t *testing.T, mutate func(*Config), b []byte) *State {
	t.Helper()
	cfg := DefaultConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Restore(b)
	if err != nil {
		t.Fatalf("restoring version %d: %v", b[0], err)
	}
	return s
}

// recordedAdvice is what s advises at each recorded line's seconds after
// last, for 2 cores and 4 GiB in force, in the lines' format.
func recordedAdvice(s *State, last int64, lines []string) []string {
	var got []string
	for _, l := range lines {
		after, _ := strconv.ParseInt(strings.Fields(l)[0], 10, 64)
		rec := s.Recommend(Resources{CPU: 2, Memory: 4 << 30}, time.Time{}, time.Unix(last+after, 0))
		got = append(got, strings.Join([]string{strconv.FormatInt(after, 10),
			rec.CPU.Decision.String(), fmtG(rec.CPU.Target), fmtG(rec.CPU.Lower),
			rec.Memory.Decision.String(), fmtG(rec.Memory.Target), fmtG(rec.Memory.Lower)}, " "))
	}
	return got
}

// fmtG prints v as Go's %v does for a float64.
func fmtG(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// The reason says where the memory peak comes from once the profile is in
// use.
func TestProfileReason(t *testing.T) {
	s := newState(t, oneValue)
	now, p := t0, &pod{}
	feed(s, &now, p, 2*24*12, 0.1, 500)
	got := s.Recommend(p.cur, p.changed, now.Add(-step)).Memory.Reason()
	// Two days seen, one boundary crossed: trusted a third.
	want := "memory peak over last 4h and at this time of day on past days, 67% of the way to the peak over last 48h, is 500 MiB, 0.66 of the 756 MiB in force; within 756 MiB..945 MiB: hold"
	if got != want {
		t.Errorf("reason:\n got %s\nwant %s", got, want)
	}
	feed(s, &now, p, 2*24*12, 0.1, 500)
	got = s.Recommend(p.cur, p.changed, now.Add(-step)).Memory.Reason()
	want = "memory peak over last 4h and at this time of day on past days is 500 MiB, 0.66 of the 756 MiB in force; within 756 MiB..945 MiB: hold"
	if got != want {
		t.Errorf("reason:\n got %s\nwant %s", got, want)
	}
}

func TestDayAndHour(t *testing.T) {
	for _, tc := range []struct {
		t    time.Time
		day  int64
		hour int
	}{
		{time.Date(1970, 1, 2, 3, 4, 5, 0, time.UTC), 1, 3},
		{time.Date(2026, 1, 1, 23, 59, 59, 0, time.UTC), 20454, 23},
		{time.Date(1969, 12, 31, 22, 0, 0, 0, time.UTC), -1, 22},
		{time.Date(2026, 1, 1, 10, 0, 0, 0, time.FixedZone("x", 3600)), 20454, 9},
	} {
		day, hour := dayAndHour(tc.t)
		if day != tc.day || hour != tc.hour {
			t.Errorf("dayAndHour(%v) = %d, %d, want %d, %d", tc.t, day, hour, tc.day, tc.hour)
		}
	}
}

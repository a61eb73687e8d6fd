package recommend

import (
	"math"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	step = 5 * time.Minute
	mib  = 1 << 20
)

func newState(t *testing.T, mutate func(*Config)) *State {
	t.Helper()
	cfg := DefaultConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r.NewState()
}

// feed adds n samples of cpu cores and mem MiB, one per step from *now, and
// applies each recommendation, as a controller would; it returns the
// decisions taken.
func feed(s *State, now *time.Time, cur *Resources, n int, cpu, mem float64) []Recommendation {
	var out []Recommendation
	for range n {
		s.AddSample(Sample{CPU: cpu, Memory: mem * mib}, *now)
		rec := s.Recommend(*cur, *now)
		*cur = Resources{CPU: rec.CPU.Target, Memory: rec.Memory.Target}
		out = append(out, rec)
		*now = now.Add(step)
	}
	return out
}

type decisions struct {
	CPU, Memory Decision
}

func TestRules(t *testing.T) {
	cases := map[string]struct {
		// history is fed first; its decisions are not checked.
		historyCPU, historyMem float64
		historySamples         int
		// then, per event, the decision wanted right after it.
		event      func(s *State, now time.Time, cur Resources)
		wantFirst  decisions
		wantTarget func(cur, got Resources) bool
	}{
		"spike raises CPU within one decision": {
			historyCPU: 0.5, historyMem: 500, historySamples: 24,
			event: func(s *State, now time.Time, _ Resources) {
				s.AddSample(Sample{CPU: 2, Memory: 500 * mib}, now)
			},
			wantFirst:  decisions{CPU: Raise, Memory: Hold},
			wantTarget: func(_, got Resources) bool { return got.CPU > 2 },
		},
		"steady usage holds": {
			historyCPU: 0.5, historyMem: 500, historySamples: 24,
			event: func(s *State, now time.Time, _ Resources) {
				s.AddSample(Sample{CPU: 0.5, Memory: 500 * mib}, now)
			},
			wantFirst:  decisions{CPU: Hold, Memory: Hold},
			wantTarget: func(cur, got Resources) bool { return cur == got },
		},
		"OOM kill raises memory above the limit it died at": {
			historyCPU: 0.5, historyMem: 500, historySamples: 24,
			event: func(s *State, now time.Time, cur Resources) {
				s.RecordOOM(now, cur.Memory)
				s.AddSample(Sample{CPU: 0.5, Memory: 500 * mib}, now)
			},
			wantFirst:  decisions{CPU: Hold, Memory: Raise},
			wantTarget: func(cur, got Resources) bool { return got.Memory >= cur.Memory*1.2 },
		},
		"memory approaching the limit raises memory": {
			historyCPU: 0.5, historyMem: 500, historySamples: 24,
			event: func(s *State, now time.Time, cur Resources) {
				s.AddSample(Sample{CPU: 0.5, Memory: 0.97 * cur.Memory}, now)
			},
			wantFirst:  decisions{CPU: Hold, Memory: Raise},
			wantTarget: func(cur, got Resources) bool { return got.Memory > cur.Memory },
		},
		"throttling raises CPU although usage reads below the limit": {
			historyCPU: 0.5, historyMem: 500, historySamples: 24,
			event: func(s *State, now time.Time, cur Resources) {
				s.RecordThrottling(now, 0.18, cur.CPU)
				s.AddSample(Sample{CPU: 0.5, Memory: 500 * mib}, now)
			},
			wantFirst:  decisions{CPU: Raise, Memory: Hold},
			wantTarget: func(cur, got Resources) bool { return got.CPU >= cur.CPU*1.2 },
		},
		"throttling under the threshold holds": {
			historyCPU: 0.5, historyMem: 500, historySamples: 24,
			event: func(s *State, now time.Time, cur Resources) {
				s.RecordThrottling(now, 0.01, cur.CPU)
				s.AddSample(Sample{CPU: 0.5, Memory: 500 * mib}, now)
			},
			wantFirst:  decisions{CPU: Hold, Memory: Hold},
			wantTarget: func(cur, got Resources) bool { return cur == got },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := newState(t, nil)
			now, cur := t0, Resources{}
			feed(s, &now, &cur, tc.historySamples, tc.historyCPU, tc.historyMem)
			before := cur
			tc.event(s, now, cur)
			rec := s.Recommend(cur, now)
			got := decisions{CPU: rec.CPU.Decision, Memory: rec.Memory.Decision}
			if diff := cmp.Diff(tc.wantFirst, got); diff != "" {
				t.Errorf("decisions (-want,+got):\n%s\ncpu: %s\nmemory: %s", diff, rec.CPU.Reason(), rec.Memory.Reason())
			}
			after := Resources{CPU: rec.CPU.Target, Memory: rec.Memory.Target}
			if !tc.wantTarget(before, after) {
				t.Errorf("targets went from %+v to %+v", before, after)
			}
		})
	}
}

func TestIdleLowersOnlyAfterStabilization(t *testing.T) {
	s := newState(t, nil)
	now, cur := t0, Resources{}
	feed(s, &now, &cur, 24, 2, 500)
	high := cur
	// Idle from here: the CPU peak leaves the 1h window after about 12
	// samples, then the stabilization window (30m, 6 samples) must pass.
	recs := feed(s, &now, &cur, 36, 0.1, 500)
	firstLower := -1
	for i, r := range recs {
		if r.CPU.Decision == Lower {
			firstLower = i
			break
		}
		if r.CPU.Decision == Raise {
			t.Fatalf("sample %d: raised while idle: %s", i, r.CPU.Reason())
		}
	}
	if firstLower < 0 {
		t.Fatalf("never lowered from %v cores in 3h idle", high.CPU)
	}
	cfg := DefaultConfig()
	idleFor := time.Duration(firstLower) * step
	if min := cfg.CPUWindow + cfg.Stabilization - step; idleFor < min {
		t.Errorf("lowered after %v idle, want at least %v (window + stabilization)", idleFor, min)
	}
	if got, floor := recs[firstLower].CPU.Target, high.CPU*(1-cfg.MaxStepDown); got < floor {
		t.Errorf("first lowering went to %v, below the step limit %v", got, floor)
	}
	if !strings.Contains(recs[firstLower].CPU.Reason(), ": lower to") {
		t.Errorf("reason %q does not say why it lowered", recs[firstLower].CPU.Reason())
	}
	if cur.CPU >= high.CPU {
		t.Errorf("CPU still %v after 3h idle, was %v", cur.CPU, high.CPU)
	}
	if recs[len(recs)-1].Memory.Decision != Hold || cur.Memory != high.Memory {
		t.Errorf("memory moved from %v to %v with steady memory use", high.Memory, cur.Memory)
	}
}

// A controller's clock is not aligned to seconds: a window that starts at
// 0.9s into a second has not passed at the next whole second after it.
func TestStabilizationIsNeverCutShortBySubSecondClocks(t *testing.T) {
	const window = 25 * time.Second
	s := newState(t, func(c *Config) { c.Stabilization = window; c.CPUWindow = time.Minute })
	cur := Resources{CPU: 1, Memory: 500 * mib}
	start := t0.Add(900 * time.Millisecond)
	s.AddSample(Sample{CPU: 0.02, Memory: 400 * mib}, start)
	if got := s.Recommend(cur, start).CPU.Decision; got != Hold {
		t.Fatalf("first idle decision %v, want Hold (the window starts here)", got)
	}
	for _, at := range []time.Duration{10 * time.Second, window - 900*time.Millisecond, window - time.Nanosecond} {
		now := start.Add(at)
		s.AddSample(Sample{CPU: 0.02, Memory: 400 * mib}, now)
		if rec := s.Recommend(cur, now).CPU; rec.Decision != Hold {
			t.Fatalf("%v into a %v window: %v (%s)", at, window, rec.Decision, rec.Reason())
		}
	}
	now := start.Add(window)
	if rec := s.Recommend(cur, now).CPU; rec.Decision != Lower {
		t.Fatalf("at the end of the window: %v (%s), want Lower", rec.Decision, rec.Reason())
	}
}

func TestMemoryNeverBelowRecentPeak(t *testing.T) {
	s := newState(t, nil)
	now, cur := t0, Resources{}
	feed(s, &now, &cur, 12, 0.1, 200)
	feed(s, &now, &cur, 1, 0.1, 1000)
	// A day of low use: the day-old peak must still be covered.
	feed(s, &now, &cur, 24*12, 0.1, 200)
	if cur.Memory < 1000*mib {
		t.Errorf("memory %v MiB after a day, below the peak of 1000 MiB", cur.Memory/mib)
	}
}

func TestRestartDelaysLowering(t *testing.T) {
	s := newState(t, nil)
	now, cur := t0, Resources{}
	feed(s, &now, &cur, 24, 2, 500)
	cfg := DefaultConfig()
	// Idle until one sample before lowering would be due.
	recs := feed(s, &now, &cur, int((cfg.CPUWindow+cfg.Stabilization)/step)-2, 0.1, 500)
	for _, r := range recs {
		if r.CPU.Decision != Hold {
			t.Fatalf("decided %v before the window passed: %s", r.CPU.Decision, r.CPU.Reason())
		}
	}
	s.RecordRestart(now)
	recs = feed(s, &now, &cur, int(cfg.Stabilization/step)-1, 0.1, 500)
	for _, r := range recs {
		if r.CPU.Decision == Lower {
			t.Fatalf("lowered within the stabilization window after a restart: %s", r.CPU.Reason())
		}
	}
}

func TestBounds(t *testing.T) {
	s := newState(t, func(c *Config) { c.MaxCPU = 1; c.MinMemory = 1024 * mib })
	now, cur := t0, Resources{}
	feed(s, &now, &cur, 3, 4, 10)
	if diff := cmp.Diff(Resources{CPU: 1, Memory: 1024 * mib}, cur); diff != "" {
		t.Errorf("bounded targets (-want,+got):\n%s", diff)
	}
}

func TestNoSamplesHolds(t *testing.T) {
	s := newState(t, nil)
	rec := s.Recommend(Resources{CPU: 1, Memory: 100 * mib}, t0)
	got := decisions{CPU: rec.CPU.Decision, Memory: rec.Memory.Decision}
	if diff := cmp.Diff(decisions{Hold, Hold}, got); diff != "" {
		t.Errorf("decisions (-want,+got):\n%s", diff)
	}
	if rec.CPU.Reason() != "cpu: no usage seen yet" {
		t.Errorf("reason = %q", rec.CPU.Reason())
	}
}

func TestValidate(t *testing.T) {
	cases := map[string]struct {
		mutate  func(*Config)
		wantErr string
	}{
		"defaults":           {mutate: func(*Config) {}},
		"zero cpu window":    {mutate: func(c *Config) { c.CPUWindow = 0 }, wantErr: "cpuWindow must be positive"},
		"hysteresis of 1":    {mutate: func(c *Config) { c.Hysteresis = 1 }, wantErr: "hysteresis must be within"},
		"oom bump below 1":   {mutate: func(c *Config) { c.OOMBump = 0.9 }, wantErr: "oomBump must be within"},
		"max below min":      {mutate: func(c *Config) { c.MinCPU, c.MaxCPU = 2, 1 }, wantErr: "cpu maximum 1 is below its minimum 2"},
		"negative stabilize": {mutate: func(c *Config) { c.Stabilization = -time.Second }, wantErr: "stabilization must not be negative"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.mutate(&cfg)
			err := cfg.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if tc.wantErr == "" && got != "" || !strings.Contains(got, tc.wantErr) {
				t.Errorf("Validate() = %q, want it to contain %q", got, tc.wantErr)
			}
		})
	}
}

func TestPeakWindow(t *testing.T) {
	bucket := 5 * time.Minute
	type add struct {
		at    time.Duration
		value float64
	}
	cases := map[string]struct {
		adds []add
		at   time.Duration
		want float64
	}{
		"empty":                      {at: 0, want: 0},
		"highest of one bucket":      {adds: []add{{0, 2}, {time.Minute, 1}}, at: time.Minute, want: 2},
		"kept within window":         {adds: []add{{0, 2}, {22 * bucket, 1}}, at: 22 * bucket, want: 2},
		"old bucket forgotten":       {adds: []add{{0, 2}, {30 * bucket, 1}}, at: 30 * bucket, want: 1},
		"expired when asked later":   {adds: []add{{0, 2}}, at: 30 * bucket, want: 0},
		"long gap starts afresh":     {adds: []add{{0, 2}, {100 * bucket, 1}}, at: 100 * bucket, want: 1},
		"late sample counts in head": {adds: []add{{10 * bucket, 1}, {0, 3}}, at: 10 * bucket, want: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var w peakWindow
			for _, a := range tc.adds {
				w.add(a.value, t0.Add(a.at), bucket)
			}
			if diff := cmp.Diff(tc.want, w.peak(t0.Add(tc.at), bucket)); diff != "" {
				t.Errorf("peak (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestStateSize(t *testing.T) {
	if got := unsafe.Sizeof(State{}); got > 1024 {
		t.Errorf("State is %d bytes, want at most 1 KiB", got)
	}
}

func TestReason(t *testing.T) {
	s := newState(t, nil)
	now, cur := t0, Resources{}
	got := map[string]string{}
	rec := s.Recommend(cur, now)
	got["empty"] = rec.CPU.Reason()
	feed(s, &now, &cur, 12, 0.5, 500)
	rec = s.Recommend(cur, now.Add(-step))
	got["steady"] = rec.CPU.Reason()
	s.RecordThrottling(now, 0.18, cur.CPU)
	s.AddSample(Sample{CPU: 0.5, Memory: 500 * mib}, now)
	rec = s.Recommend(cur, now)
	got["throttled"] = rec.CPU.Reason()
	s.RecordOOM(now, cur.Memory)
	rec = s.Recommend(cur, now)
	got["oom"] = rec.Memory.Reason()
	want := map[string]string{
		"empty":     "cpu: no usage seen yet",
		"steady":    "cpu peak over last 30m is 0.5 cores, 0.94 of the 0.53 cores in force; within 0.53 cores..0.662 cores: hold",
		"throttled": "cpu peak over last 30m is 0.712 cores, 1.34 of the 0.53 cores in force; throttled 18% of periods: raise to 0.742 cores",
		"oom":       "memory peak over last 48h is 907 MiB, 1.20 of the 756 MiB in force; OOM killed 0s ago: raise to 1163 MiB",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reasons (-want,+got):\n%s", diff)
	}
}

func TestBrokenSamplesIgnored(t *testing.T) {
	s := newState(t, nil)
	now, cur := t0, Resources{}
	feed(s, &now, &cur, 6, 0.5, 500)
	before := cur
	s.AddSample(Sample{CPU: math.NaN(), Memory: math.NaN()}, now)
	s.AddSample(Sample{CPU: -1, Memory: -1}, now.Add(time.Second))
	rec := s.Recommend(cur, now.Add(time.Second))
	got := Resources{CPU: rec.CPU.Target, Memory: rec.Memory.Target}
	if diff := cmp.Diff(before, got); diff != "" {
		t.Errorf("targets after broken samples (-want,+got):\n%s", diff)
	}
	if r := rec.CPU.Reason(); strings.Contains(r, "NaN") {
		t.Errorf("reason shows a broken sample: %s", r)
	}
}

func TestThrottleBumpGrowsWithThrottling(t *testing.T) {
	cases := map[string]struct {
		throttled float64
		wantPeak  float64 // cores remembered for a 1-core limit
	}{
		"barely throttled keeps the small bump": {throttled: 0.05, wantPeak: 1.24},
		"half the periods":                      {throttled: 0.5, wantPeak: 1.6},
		"every period doubles":                  {throttled: 1, wantPeak: 2},
		"a fraction above 1 counts as 1":        {throttled: 1.5, wantPeak: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := New(DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			s := r.NewState()
			now := time.Unix(1_800_000_000, 0)
			s.AddSample(Sample{CPU: 1, Memory: 1 << 30}, now)
			s.RecordThrottling(now, tc.throttled, 1)
			rec := s.Recommend(Resources{CPU: 1, Memory: 4 << 30}, now)
			want := tc.wantPeak + DefaultConfig().CPUMinMargin
			if rec.CPU.Decision != Raise || math.Abs(rec.CPU.Target-want) > 1e-6 {
				t.Errorf("cpu = %s to %.4f, want raise to %.4f", rec.CPU.Decision, rec.CPU.Target, want)
			}
		})
	}
}

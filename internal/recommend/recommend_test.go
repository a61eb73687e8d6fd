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

// pod is what a controller knows of one pod: the values in force and when
// they last changed.
type pod struct {
	cur     Resources
	changed time.Time
}

// feed adds n samples of cpu cores and mem MiB, one per step from *now, and
// applies each recommendation to p, as a controller would; it returns the
// decisions taken.
func feed(s *State, now *time.Time, p *pod, n int, cpu, mem float64) []Recommendation {
	var out []Recommendation
	for range n {
		s.AddSample(Sample{CPU: cpu, Memory: mem * mib}, *now)
		rec := s.Recommend(p.cur, p.changed, *now)
		if next := (Resources{CPU: rec.CPU.Target, Memory: rec.Memory.Target}); next != p.cur {
			p.cur, p.changed = next, *now
		}
		out = append(out, rec)
		*now = now.Add(step)
	}
	return out
}

// oneValue is tailor before issue 26: memory as one value that sizes the
// request, the controller deriving the limit from it (MemorySplit off).
// The tests of the one value's rules state it; with the split, the same
// rules size the limit advice (split_test.go).
func oneValue(c *Config) { c.MemorySplit = false }

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
			// Memory as one value, whose kill line is the value: the
			// split's limit under the same events is TestSplitLimitTakesTheKillRules.
			s := newState(t, oneValue)
			now, p := t0, &pod{}
			feed(s, &now, p, tc.historySamples, tc.historyCPU, tc.historyMem)
			before := p.cur
			tc.event(s, now, p.cur)
			rec := s.Recommend(p.cur, p.changed, now)
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
	now, p := t0, &pod{}
	feed(s, &now, p, 24, 2, 500)
	high := p.cur
	// Idle from here: the CPU peak leaves the 1h window after about 12
	// samples, then the stabilization window (30m, 6 samples) must pass.
	recs := feed(s, &now, p, 36, 0.1, 500)
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
	if p.cur.CPU >= high.CPU {
		t.Errorf("CPU still %v after 3h idle, was %v", p.cur.CPU, high.CPU)
	}
	if recs[len(recs)-1].Memory.Decision != Hold || p.cur.Memory != high.Memory {
		t.Errorf("memory moved from %v to %v with steady memory use", high.Memory, p.cur.Memory)
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
	if got := s.Recommend(cur, time.Time{}, start).CPU.Decision; got != Hold {
		t.Fatalf("first idle decision %v, want Hold (the window starts here)", got)
	}
	for _, at := range []time.Duration{10 * time.Second, window - 900*time.Millisecond, window - time.Nanosecond} {
		now := start.Add(at)
		s.AddSample(Sample{CPU: 0.02, Memory: 400 * mib}, now)
		if rec := s.Recommend(cur, time.Time{}, now).CPU; rec.Decision != Hold {
			t.Fatalf("%v into a %v window: %v (%s)", at, window, rec.Decision, rec.Reason())
		}
	}
	now := start.Add(window)
	if rec := s.Recommend(cur, time.Time{}, now).CPU; rec.Decision != Lower {
		t.Fatalf("at the end of the window: %v (%s), want Lower", rec.Decision, rec.Reason())
	}
}

func TestMemoryNeverBelowRecentPeak(t *testing.T) {
	s := newState(t, nil)
	now, p := t0, &pod{}
	feed(s, &now, p, 12, 0.1, 200)
	feed(s, &now, p, 1, 0.1, 1000)
	// A day of low use: the day-old peak must still be covered.
	feed(s, &now, p, 24*12, 0.1, 200)
	if p.cur.Memory < 1000*mib {
		t.Errorf("memory %v MiB after a day, below the peak of 1000 MiB", p.cur.Memory/mib)
	}
}

func TestRestartDelaysLowering(t *testing.T) {
	s := newState(t, nil)
	now, p := t0, &pod{}
	feed(s, &now, p, 24, 2, 500)
	cfg := DefaultConfig()
	// Idle until one sample before lowering would be due.
	recs := feed(s, &now, p, int((cfg.CPUWindow+cfg.Stabilization)/step)-2, 0.1, 500)
	for _, r := range recs {
		if r.CPU.Decision != Hold {
			t.Fatalf("decided %v before the window passed: %s", r.CPU.Decision, r.CPU.Reason())
		}
	}
	s.RecordRestart(now)
	recs = feed(s, &now, p, int(cfg.Stabilization/step)-1, 0.1, 500)
	for _, r := range recs {
		if r.CPU.Decision == Lower {
			t.Fatalf("lowered within the stabilization window after a restart: %s", r.CPU.Reason())
		}
	}
}

func TestBounds(t *testing.T) {
	s := newState(t, func(c *Config) { c.MaxCPU = 1; c.MinMemory = 1024 * mib })
	now, p := t0, &pod{}
	feed(s, &now, p, 3, 4, 10)
	if diff := cmp.Diff(Resources{CPU: 1, Memory: 1024 * mib}, p.cur); diff != "" {
		t.Errorf("bounded targets (-want,+got):\n%s", diff)
	}
}

func TestNoSamplesHolds(t *testing.T) {
	s := newState(t, nil)
	rec := s.Recommend(Resources{CPU: 1, Memory: 100 * mib}, time.Time{}, t0)
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

// The one value's reasons; the split's request and limit reasons are in
// TestSplitRequestFromTypicalPeakLimitFromTail.
func TestReason(t *testing.T) {
	s := newState(t, oneValue)
	now, p := t0, &pod{}
	got := map[string]string{}
	rec := s.Recommend(p.cur, p.changed, now)
	got["empty"] = rec.CPU.Reason()
	feed(s, &now, p, 12, 0.5, 500)
	rec = s.Recommend(p.cur, p.changed, now.Add(-step))
	got["steady"] = rec.CPU.Reason()
	s.RecordThrottling(now, 0.18, p.cur.CPU)
	s.AddSample(Sample{CPU: 0.5, Memory: 500 * mib}, now)
	rec = s.Recommend(p.cur, p.changed, now)
	got["throttled"] = rec.CPU.Reason()
	s.RecordOOM(now, p.cur.Memory)
	rec = s.Recommend(p.cur, p.changed, now)
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
	now, p := t0, &pod{}
	feed(s, &now, p, 6, 0.5, 500)
	before := p.cur
	s.AddSample(Sample{CPU: math.NaN(), Memory: math.NaN()}, now)
	s.AddSample(Sample{CPU: -1, Memory: -1}, now.Add(time.Second))
	rec := s.Recommend(p.cur, p.changed, now.Add(time.Second))
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
			rec := s.Recommend(Resources{CPU: 1, Memory: 4 << 30}, time.Time{}, now)
			want := tc.wantPeak + DefaultConfig().CPUMinMargin
			if rec.CPU.Decision != Raise || math.Abs(rec.CPU.Target-want) > 1e-6 {
				t.Errorf("cpu = %s to %.4f, want raise to %.4f", rec.CPU.Decision, rec.CPU.Target, want)
			}
		})
	}
}

// One state advises many pods: Recommend must not change it, and each pod's
// advice depends only on its own values and last change.
func TestRecommendAdvisesManyPods(t *testing.T) {
	s := newState(t, nil)
	now := t0
	for range 24 {
		s.AddSample(Sample{CPU: 0.1, Memory: 200 * mib}, now)
		now = now.Add(step)
	}
	now = now.Add(-step)
	before := *s
	type pod struct {
		cur     Resources
		changed time.Duration // before now; 0 means unknown
	}
	cases := map[string]struct {
		pod  pod
		want decisions
	}{
		"oversized, unchanged for long":    {pod: pod{cur: Resources{CPU: 2, Memory: 4096 * mib}}, want: decisions{Lower, Lower}},
		"oversized, changed a window ago":  {pod: pod{cur: Resources{CPU: 2, Memory: 4096 * mib}, changed: 15 * time.Minute}, want: decisions{Lower, Lower}},
		"oversized, changed within window": {pod: pod{cur: Resources{CPU: 2, Memory: 4096 * mib}, changed: 14 * time.Minute}, want: decisions{Hold, Hold}},
		// By default the request is the last day's peak with no margin
		// (MemorySplit): 200 MiB, where one value needs 456 MiB.
		"right-sized":                        {pod: pod{cur: Resources{CPU: 0.14, Memory: 200 * mib}}, want: decisions{Hold, Hold}},
		"undersized raises whatever changed": {pod: pod{cur: Resources{CPU: 0.05, Memory: 100 * mib}, changed: time.Second}, want: decisions{Raise, Raise}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var changed time.Time
			if tc.pod.changed > 0 {
				changed = now.Add(-tc.pod.changed)
			}
			rec := s.Recommend(tc.pod.cur, changed, now)
			got := decisions{CPU: rec.CPU.Decision, Memory: rec.Memory.Decision}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decisions (-want,+got):\n%s\ncpu: %s\nmemory: %s", diff, rec.CPU.Reason(), rec.Memory.Reason())
			}
		})
	}
	if diff := cmp.Diff(before, *s, cmp.AllowUnexported(State{}, peakWindow{}, dailyProfile{}), cmp.Comparer(func(a, b *Recommender) bool { return a == b })); diff != "" {
		t.Errorf("Recommend changed the state (-before,+after):\n%s", diff)
	}
}

// Lowering needs every needed value over the window below the band, data
// covering the window, and no restart in it; a window of 0 lowers at once.
func TestStabilizationConditions(t *testing.T) {
	const window = 15 * time.Minute
	high := Resources{CPU: 2, Memory: 4096 * mib}
	cases := map[string]struct {
		stabilization time.Duration
		// events run on a fresh state; Recommend is asked at the last
		// sample's time plus ask.
		events func(s *State) time.Time
		ask    time.Duration
		want   Decision
		// wantEarly: the hold is the stabilization window's alone, which
		// Early lets room-making cut short.
		wantEarly bool
	}{
		"idle for the whole window lowers": {
			stabilization: window,
			events:        idle(0, window),
			want:          Lower,
		},
		"first sample less than a window ago holds": {
			stabilization: window,
			events:        idle(0, window-step),
			want:          Hold,
			wantEarly:     true,
		},
		"a busy sample inside the window holds": {
			stabilization: window,
			events: func(s *State) time.Time {
				idle(0, window)(s)
				// A burst 14 minutes before the end, which the 5-minute CPU
				// window has forgotten but the stabilization window keeps.
				s.AddSample(Sample{CPU: 1.9, Memory: 200 * mib}, t0.Add(window+time.Minute))
				return idle(window+step, 2*window)(s)
			},
			want:      Hold,
			wantEarly: true,
		},
		"a busy sample just before the window lowers": {
			stabilization: window,
			events: func(s *State) time.Time {
				s.AddSample(Sample{CPU: 1.9, Memory: 200 * mib}, t0)
				return idle(step, window+step)(s)
			},
			ask:  time.Minute,
			want: Lower,
		},
		"a restart inside the window holds": {
			stabilization: window,
			events: func(s *State) time.Time {
				end := idle(0, 2*window)(s)
				s.RecordRestart(end.Add(-window + time.Second))
				return end
			},
			want:      Hold,
			wantEarly: true,
		},
		"a gap longer than the CPU window starts afresh": {
			stabilization: window,
			events: func(s *State) time.Time {
				idle(0, window)(s)
				return idle(window+time.Hour, window+time.Hour+window-step)(s)
			},
			want:      Hold,
			wantEarly: true,
		},
		"samples stopped long ago hold": {
			stabilization: window,
			events:        idle(0, window),
			ask:           time.Hour,
			want:          Hold,
		},
		"no stabilization lowers on the first sample": {
			events: idle(0, 0),
			want:   Lower,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := newState(t, func(c *Config) { c.Stabilization = tc.stabilization; c.CPUWindow = 5 * time.Minute })
			now := tc.events(s).Add(tc.ask)
			rec := s.Recommend(high, time.Time{}, now).CPU
			if rec.Decision != tc.want {
				t.Errorf("decision %v, want %v (%s)", rec.Decision, tc.want, rec.Reason())
			}
			early, ok := rec.Early()
			if ok != tc.wantEarly {
				t.Errorf("Early() = %v, %v; want an early lowering %v (%s)", early, ok, tc.wantEarly, rec.Reason())
			}
			// Cut short, the window gives what its end would: the step
			// limit still holds.
			if ok && (early >= high.CPU || early < high.CPU*(1-DefaultConfig().MaxStepDown)) {
				t.Errorf("early lowering to %v from %v: not a lowering within the step limit", early, high.CPU)
			}
		})
	}
}

// idle returns events that add an idle sample every step from t0+from to
// t0+to, and the time of the last.
func idle(from, to time.Duration) func(s *State) time.Time {
	return func(s *State) time.Time {
		at := t0.Add(from)
		for ; !at.After(t0.Add(to)); at = at.Add(step) {
			s.AddSample(Sample{CPU: 0.05, Memory: 200 * mib}, at)
		}
		return at.Add(-step)
	}
}

// A controller that restarts sees the pods' last terminations again, each
// now under the limit tailor raised since: an OOM kill already recorded, or
// one older than the memory window, must not raise memory once more.
func TestOOMKillsAreRecordedOnce(t *testing.T) {
	const gi = 1 << 30
	s := newState(t, nil)
	t0 := time.Unix(1_700_000_000, 0)
	s.AddSample(Sample{CPU: 0.1, Memory: 0.5 * gi}, t0)
	s.RecordOOM(t0.Add(time.Minute), 1*gi)
	now := t0.Add(2 * time.Minute)
	s.AddSample(Sample{CPU: 0.1, Memory: 0.5 * gi}, now)
	first := s.Recommend(Resources{CPU: 0.2, Memory: 1.2 * gi}, time.Time{}, now)
	// The same kill again, read under a limit raised to 2Gi since.
	s.RecordOOM(t0.Add(time.Minute), 2*gi)
	if again := s.Recommend(Resources{CPU: 0.2, Memory: 1.2 * gi}, time.Time{}, now); again.Memory.Target != first.Memory.Target {
		t.Errorf("memory target %v after the same kill was seen again, was %v", again.Memory.Target, first.Memory.Target)
	}
	// A kill from before the 48h memory window, seen for the first time.
	later := now.Add(72 * time.Hour)
	s.AddSample(Sample{CPU: 0.1, Memory: 0.5 * gi}, later)
	before := s.Recommend(Resources{CPU: 0.2, Memory: 1.2 * gi}, time.Time{}, later)
	s.RecordOOM(later.Add(-60*time.Hour), 4*gi)
	if after := s.Recommend(Resources{CPU: 0.2, Memory: 1.2 * gi}, time.Time{}, later); after.Memory.Target != before.Memory.Target {
		t.Errorf("memory target %v after a kill from 60h ago, was %v", after.Memory.Target, before.Memory.Target)
	}
}

// A working set on course for its limit raises memory before the kill: to
// where the course leads in MemoryLead, plus the usual margin; stalls on
// memory raise it as a kill would. Growth that stays clear of the limit,
// no limit, or broken figures change nothing.
func TestMemoryRiskRaisesBeforeTheKill(t *testing.T) {
	// Memory as one value: the value in force is the limit the risk is
	// measured against. The split's limit advice is checked at the end.
	small := func(c *Config) {
		c.MemoryMinMargin = 16 * mib
		c.MemoryJitterMargin = 0
		c.MemoryProfile = false
		c.MemorySplit = false
	}
	at := t0.Add(time.Hour)
	base := func() *State {
		s := newState(t, small)
		s.AddSample(Sample{CPU: 0.1, Memory: 178 * mib}, at)
		return s
	}
	limit := 256.0 * mib
	cur := Resources{CPU: 0.2, Memory: limit}
	held := base().Recommend(cur, time.Time{}, at).Memory
	if held.Decision == Raise {
		t.Fatalf("178Mi of 256Mi with a 16Mi margin raises without any risk: %v", held.Target/mib)
	}

	// 20 MiB/s from 178Mi: at the limit in 3.9s; in 10s at 378Mi.
	s := base()
	s.RecordMemoryRisk(at, 178*mib, 20*mib, -1, limit)
	got := s.Recommend(cur, time.Time{}, at).Memory
	if want := (178.0 + 200) * mib * 1.05; got.Decision != Raise || math.Abs(got.Target-want) > mib {
		t.Errorf("ramp: %v to %.0fMi, want a raise to %.0fMi", got.Decision, got.Target/mib, want/mib)
	}
	// 50 MiB/s would lead to 678Mi: one risk at most doubles the limit.
	s = base()
	s.RecordMemoryRisk(at, 178*mib, 50*mib, -1, limit)
	got = s.Recommend(cur, time.Time{}, at).Memory
	if want := 2 * limit * 1.05; got.Decision != Raise || math.Abs(got.Target-want) > mib {
		t.Errorf("fast ramp: %v to %.0fMi, want a raise to %.0fMi", got.Decision, got.Target/mib, want/mib)
	}

	// Stalled on memory 30% of the time: as an OOM kill at the limit.
	s = base()
	s.RecordMemoryRisk(at, 178*mib, 0, 0.3, limit)
	if got := s.Recommend(cur, time.Time{}, at).Memory; got.Decision != Raise || got.Target < limit*1.2 {
		t.Errorf("pressure: %v to %.0fMi, want at least %.0fMi", got.Decision, got.Target/mib, limit*1.2/mib)
	}

	for name, rec := range map[string][4]float64{
		"slow growth, far from the limit": {178 * mib, 1 * mib, -1, limit},
		"pressure under the threshold":    {178 * mib, 0, 0.05, limit},
		"no limit":                        {178 * mib, 50 * mib, 0.9, 0},
		"NaN growth":                      {178 * mib, math.NaN(), -1, limit},
		"infinite growth":                 {178 * mib, math.Inf(1), -1, limit},
	} {
		s := base()
		s.RecordMemoryRisk(at, rec[0], rec[1], rec[2], rec[3])
		if got := s.Recommend(cur, time.Time{}, at).Memory; got.Target != held.Target || got.Decision != held.Decision {
			t.Errorf("%s: %v to %.0fMi, want %v to %.0fMi as without it", name, got.Decision, got.Target/mib, held.Decision, held.Target/mib)
		}
	}

	off := newState(t, func(c *Config) { small(c); c.MemoryLead = 0; c.MemoryPressureAt = 0 })
	off.AddSample(Sample{CPU: 0.1, Memory: 178 * mib}, at)
	off.RecordMemoryRisk(at, 178*mib, 50*mib, 0.9, limit)
	if got := off.Recommend(cur, time.Time{}, at).Memory; got.Decision == Raise {
		t.Errorf("with MemoryLead and MemoryPressureAt off, a risk raised memory to %.0fMi", got.Target/mib)
	}

	// With the request and the limit sized apart (the default), the same
	// risks raise the limit advice to the same values, the request to the
	// course's end without the margin.
	for name, tc := range map[string]struct {
		growth, pressure   float64
		wantLimit, wantReq float64
	}{
		"ramp":      {growth: 20 * mib, pressure: -1, wantLimit: (178.0 + 200) * mib * 1.05, wantReq: (178.0 + 200) * mib},
		"fast ramp": {growth: 50 * mib, pressure: -1, wantLimit: 2 * limit * 1.05, wantReq: 2 * limit},
		"pressure":  {pressure: 0.3, wantLimit: limit * 1.2 * 1.05, wantReq: limit * 1.2},
	} {
		s := newState(t, func(c *Config) { small(c); c.MemorySplit = true })
		s.AddSample(Sample{CPU: 0.1, Memory: 178 * mib}, at)
		s.RecordMemoryRisk(at, 178*mib, tc.growth, tc.pressure, limit)
		rec := s.Recommend(Resources{CPU: 0.2, Memory: 178 * mib, MemoryLimit: limit}, time.Time{}, at)
		if l := rec.MemoryLimit; l.Decision != Raise || math.Abs(l.Target-tc.wantLimit) > mib {
			t.Errorf("split, %s: limit %v to %.0fMi, want a raise to %.0fMi", name, l.Decision, l.Target/mib, tc.wantLimit/mib)
		}
		if m := rec.Memory; m.Decision != Raise || math.Abs(m.Target-tc.wantReq) > mib {
			t.Errorf("split, %s: request %v to %.0fMi, want a raise to %.0fMi", name, m.Decision, m.Target/mib, tc.wantReq/mib)
		}
	}
}

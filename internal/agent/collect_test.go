package agent

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tailorhq/tailor/internal/agent/cgroup"
	"github.com/tailorhq/tailor/internal/agent/report"
)

const (
	uid = "3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b"
	cid = "8e2f1c0d3b4a59687766554433221100ffeeddccbbaa99887766554433221100"
	mi  = 1 << 20
)

var t0 = time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)

// steps feeds one container's samples a second apart and returns, per
// step, whether it made the report urgent.
type feed struct {
	col *Collector
	at  time.Time
}

func newFeed(th Thresholds) *feed { return &feed{col: NewCollector(th), at: t0} }

func (f *feed) step(s cgroup.Sample) bool {
	f.at = f.at.Add(time.Second)
	return f.col.Observe(f.at, []cgroup.Container{{PodUID: uid, ID: cid}}, []cgroup.Sample{s})
}

func cpuSample(used time.Duration, periods, throttled uint64) cgroup.Sample {
	return cgroup.Sample{CPUUsage: used, Periods: periods, Throttled: throttled, WorkingSet: 10 * mi, MemoryLimit: 100 * mi}
}

// A CPU step to the limit is urgent in the first second it shows, once per
// cooldown, and the report covers the whole time since the last one.
func TestThrottledIsUrgent(t *testing.T) {
	f := newFeed(DefaultThresholds())
	if f.step(cpuSample(0, 0, 0)) {
		t.Fatal("a first sample is urgent")
	}
	if f.step(cpuSample(20*time.Millisecond, 10, 0)) {
		t.Fatal("idle is urgent")
	}
	r := f.col.Report()
	if len(r.Containers) != 1 || r.Urgent {
		t.Fatalf("report %+v", r)
	}
	// The first report covers the first sample to the newest.
	if c := r.Containers[0]; c.Window != 1 || c.CPU < 0.019 || c.CPU > 0.021 || c.Throttled == nil || *c.Throttled != 0 {
		t.Errorf("idle report: window %v cpu %v throttled %v; want 1s, 0.02 cores, 0", c.Window, c.CPU, c.Throttled)
	}
	// Full core against a 200m quota: throttled in 9 of 10 periods.
	if !f.step(cpuSample(220*time.Millisecond, 20, 9)) {
		t.Fatal("a throttled second is not urgent")
	}
	r = f.col.Report()
	c := r.Containers[0]
	if !r.Urgent || !strings.HasPrefix(c.Urgent, "cpu: throttled in 90%") {
		t.Errorf("report urgent %v, container %q", r.Urgent, c.Urgent)
	}
	if c.Window != 1 || c.CPU < 0.199 || c.CPU > 0.201 || *c.Throttled != 0.9 {
		t.Errorf("window %v cpu %v throttled %v; want 1s, 0.2 cores, 0.9", c.Window, c.CPU, *c.Throttled)
	}
	// Still throttled: not again within the cooldown (3s), then once.
	var woke []int
	for i := 1; i <= 7; i++ {
		if f.step(cpuSample(time.Duration(220+200*i)*time.Millisecond, uint64(20+10*i), uint64(9+9*i))) {
			woke = append(woke, i)
			f.col.Report()
		}
	}
	// The second wake-up waits 3s, the third 6s (backoff).
	if len(woke) != 1 || woke[0] != 3 {
		t.Errorf("woke at seconds %v of 7 more throttled seconds; want [3]", woke)
	}
	// Calm again resets the backoff.
	f.step(cpuSample(1830*time.Millisecond, 100, 72))
	f.col.Report()
	if !f.step(cpuSample(2030*time.Millisecond, 110, 81)) {
		t.Errorf("throttled again after a calm second is not urgent")
	}
}

// Memory on course for its limit is urgent and at risk: a 50 MiB/s ramp
// from half a 256Mi limit is seen in its first second; a working set that
// sits near the limit without growing is neither.
func TestMemoryRampIsUrgent(t *testing.T) {
	f := newFeed(DefaultThresholds())
	mem := func(ws uint64) cgroup.Sample { return cgroup.Sample{WorkingSet: ws, MemoryLimit: 256 * mi} }
	f.step(mem(128 * mi))
	if f.step(mem(128 * mi)) {
		t.Fatal("flat memory is urgent")
	}
	if !f.step(mem(178 * mi)) {
		t.Fatal("a 50Mi/s ramp at 178Mi of 256Mi is not urgent")
	}
	c := f.col.Report().Containers[0]
	if !c.MemoryAtRisk || !strings.Contains(c.Urgent, "reaches its 256Mi limit in") || c.MemoryGrowth <= 0 {
		t.Errorf("ramp: %+v", c)
	}

	g := newFeed(DefaultThresholds())
	for range 5 {
		if g.step(mem(240 * mi)) {
			t.Fatal("a steady 94% is urgent")
		}
	}
	if c := g.col.Report().Containers[0]; c.MemoryAtRisk {
		t.Errorf("steady 94%%: at risk")
	}
	// Growing slowly near the limit: within the 10% margin.
	if !g.step(mem(241 * mi)) {
		t.Errorf("growing within the margin is not urgent")
	}
	// No limit: nothing to be killed at.
	h := newFeed(DefaultThresholds())
	h.step(cgroup.Sample{WorkingSet: 100 * mi})
	if h.step(cgroup.Sample{WorkingSet: 900 * mi}) {
		t.Errorf("growth without a limit is urgent")
	}
}

// A container that went away is forgotten; one whose counters went back is
// a new cgroup and starts over (no negative rate).
func TestCollectorForgetsAndRestarts(t *testing.T) {
	f := newFeed(DefaultThresholds())
	f.step(cpuSample(5*time.Second, 100, 0))
	f.step(cpuSample(6*time.Second, 110, 0))
	f.col.Report()
	f.step(cpuSample(time.Second, 5, 0))
	r := f.col.Report()
	if c := r.Containers[0]; c.Window != 0 || c.CPU != 0 {
		t.Errorf("after the counter went back: window %v cpu %v; want a fresh start", c.Window, c.CPU)
	}
	f.at = f.at.Add(time.Second)
	f.col.Observe(f.at, nil, nil)
	if f.col.Len() != 0 || len(f.col.Report().Containers) != 0 {
		t.Errorf("a vanished container is still reported")
	}
}

// PSI on cgroup v2, from files as the kernel writes them: memory stalls
// over the threshold put memory at risk and wake the manager; CPU stalls
// wake it for CPU.
func TestPressureFromCgroupV2Files(t *testing.T) {
	dir := "kubepods/burstable/pod" + uid + "/" + cid + "/"
	files := map[string]string{
		dir + "cpu.stat":        "usage_usec 1000000\nuser_usec 900000\nsystem_usec 100000\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n",
		dir + "memory.current":  "209715200\n",
		dir + "memory.max":      "268435456\n",
		dir + "memory.stat":     "anon 200000000\nfile 9715200\ninactive_file 4857600\n",
		dir + "memory.events":   "low 0\nhigh 0\nmax 12\noom 0\noom_kill 0\n",
		dir + "cpu.pressure":    "some avg10=0.00 avg60=0.00 avg300=0.00 total=1200\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		dir + "memory.pressure": "some avg10=18.42 avg60=6.10 avg300=1.33 total=7716525\nfull avg10=11.05 avg60=3.64 avg300=0.79 total=4622270\n",
	}
	root := t.TempDir()
	writeFiles(t, root, files)
	tree := cgroup.Tree{Root: root, Version: cgroup.V2}
	col := NewCollector(DefaultThresholds())
	urgent, err := newReader(tree).sample(col, t0)
	if err != nil || !urgent {
		t.Fatalf("memory stalls 18%% over 10%%: urgent %v, err %v", urgent, err)
	}
	c := col.Report().Containers[0]
	if !c.MemoryAtRisk || c.MemoryPressure == nil || math.Abs(*c.MemoryPressure-0.1842) > 1e-9 || !strings.Contains(c.Urgent, "stalled on memory 18%") {
		t.Errorf("memory pressure: %+v", c)
	}
	if c.CPUPressure == nil || *c.CPUPressure != 0 {
		t.Errorf("cpu pressure %v, want 0", c.CPUPressure)
	}

	files[dir+"memory.pressure"] = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
	files[dir+"cpu.pressure"] = "some avg10=61.70 avg60=20.00 avg300=5.00 total=99999\nfull avg10=40.00 avg60=10.00 avg300=2.00 total=5000\n"
	writeFiles(t, root, files)
	col = NewCollector(DefaultThresholds())
	if urgent, err := newReader(tree).sample(col, t0); err != nil || !urgent {
		t.Fatalf("cpu stalls 62%%: urgent %v, err %v", urgent, err)
	}
	if c := col.Report().Containers[0]; c.MemoryAtRisk || !strings.HasPrefix(c.Urgent, "cpu: tasks stalled on CPU 62%") {
		t.Errorf("cpu pressure: %+v", c)
	}
}

// writeFiles writes files (path relative to root: content) under root,
// making their directories: a cgroup tree as a test needs it.
func writeFiles(tb testing.TB, root string, files map[string]string) {
	tb.Helper()
	for rel, content := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// ramp is a working set as cluster.Ramp drives the e2e load generator's:
// flat at from, then from start on growing perSec a second, a tenth of it
// at the start of each tenth of a second, up to to.
func ramp(from, to, perSec uint64, start time.Time) func(time.Time) uint64 {
	return func(at time.Time) uint64 {
		if at.Before(start) {
			return from
		}
		steps := uint64(at.Sub(start)/(100*time.Millisecond)) + 1
		return min(from+steps*perSec/10, to)
	}
}

// wakes steps f n times, the working set and limit at each sample given by
// sample (i counts from 0), and returns the steps at which the container
// woke the manager with the report each made; a report is taken at each
// wake-up, as Run does.
func (f *feed) wakes(n int, sample func(i int, at time.Time) cgroup.Sample) ([]int, []report.Container) {
	var woke []int
	var reps []report.Container
	for i := range n {
		if f.step(sample(i, f.at.Add(time.Second))) {
			woke = append(woke, i)
			reps = append(reps, f.col.Report().Containers[0])
		}
	}
	return woke, reps
}

// within says whether got is within tol (a share) of want.
func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol*want }

// A ramp that starts after flat seconds is reported at its own rate, not
// at the rate of the whole window the agent keeps: the e2e load generator's
// 50Mi/s ramp, begun just after a sample, read 17Mi/s (the flat seconds
// diluting it) and the manager raised for a third of it. Tolerance: 5%
// (a sample sees the generator's steps of 5Mi, so one step less or more
// than a second's is 10% off and fails it).
func TestMemoryGrowthIsTheRampsNotTheWindows(t *testing.T) {
	f := newFeed(DefaultThresholds())
	ws := ramp(128*mi, 384*mi, 50*mi, t0.Add(3*time.Second+20*time.Millisecond))
	woke, reps := f.wakes(3, func(_ int, at time.Time) cgroup.Sample {
		return cgroup.Sample{WorkingSet: ws(at), MemoryLimit: 256 * mi}
	})
	if len(woke) != 0 {
		t.Fatalf("woke at %v while flat", woke)
	}
	if !f.step(cgroup.Sample{WorkingSet: ws(f.at.Add(time.Second)), MemoryLimit: 256 * mi}) {
		t.Fatal("the ramp's first second is not urgent")
	}
	reps = append(reps, f.col.Report().Containers[0])
	c := reps[0]
	if !within(c.MemoryGrowth, 50*mi, 0.05) || !c.MemoryAtRisk || !strings.Contains(c.Urgent, "growing 50Mi/s") {
		t.Errorf("first urgent report: growth %s/s (want 50Mi/s within 5%%), at risk %v, %q", mib(c.MemoryGrowth), c.MemoryAtRisk, c.Urgent)
	}
	// The next sample, while the wake-up's cooldown holds: the span holds
	// one flat second still.
	f.step(cgroup.Sample{WorkingSet: ws(f.at.Add(time.Second)), MemoryLimit: 512 * mi})
	if c := f.col.Report().Containers[0]; !within(c.MemoryGrowth, 50*mi, 0.05) {
		t.Errorf("second ramp second: growth %s/s, want 50Mi/s within 5%%", mib(c.MemoryGrowth))
	}
}

// An allocation that is freed a second later is not growth: once freed,
// the report carries none and nothing wakes, however steep the burst was
// (the manager would raise for memory that is gone). The burst's own
// second is urgent: it is a ramp's first second for all one sample can
// tell.
func TestMemoryBurstThenFreeIsNotGrowth(t *testing.T) {
	f := newFeed(DefaultThresholds())
	script := []uint64{100, 100, 100, 100, 180, 100, 100, 100, 100, 100}
	var woke []int
	for i, ws := range script {
		if f.step(cgroup.Sample{WorkingSet: ws * mi, MemoryLimit: 256 * mi}) {
			woke = append(woke, i)
		}
		c := f.col.Report().Containers[0]
		if i > 4 && c.MemoryGrowth != 0 {
			t.Errorf("second %d, %d s after the burst was freed: growth %s/s, want none", i, i-5, mib(c.MemoryGrowth))
		}
	}
	if len(woke) != 1 || woke[0] != 4 {
		t.Errorf("woke at seconds %v; want [4] (the burst) only", woke)
	}
	// The same after the cooldown is long over: a burst freed while the
	// container may wake at once (its first urgency) wakes nothing once
	// freed, whatever the cooldown.
	g := newFeed(Thresholds{MemoryMargin: 0.1, MemoryLead: 5 * time.Second, Cooldown: time.Nanosecond})
	for i, ws := range script {
		if g.step(cgroup.Sample{WorkingSet: ws * mi, MemoryLimit: 256 * mi}) && i > 4 {
			t.Errorf("second %d, after the burst was freed, woke: %q", i, g.col.Report().Containers[0].Urgent)
		}
		g.col.Report()
	}
}

// A working set that jitters near its limit is not growing in the second
// it rises, while it is no higher than the span ago: each such rise taken
// for growth wakes the manager for nothing (a fifth more often, for a
// working set jittering under a limit it cannot be raised from).
func TestMemoryJitterIsNotGrowth(t *testing.T) {
	f := newFeed(DefaultThresholds())
	for i, ws := range []uint64{252, 250, 249, 251} {
		urgent := f.step(cgroup.Sample{WorkingSet: ws * mi, MemoryLimit: 256 * mi})
		if c := f.col.Report().Containers[0]; urgent || c.MemoryGrowth != 0 {
			t.Errorf("second %d, %dMi: urgent %v, growth %s/s; want neither", i, ws, urgent, mib(c.MemoryGrowth))
		}
	}
}

// managerRaise stands in for the manager's answer to a memory risk
// (recommend.State.RecordMemoryRisk with its default 10s lead): the limit
// where the course leads in 10s, at most twice the limit in force.
func managerRaise(c report.Container) uint64 {
	return min(c.WorkingSet+uint64(c.MemoryGrowth*10), 2*c.MemoryLimit)
}

// A raise that falls short of where the ramp goes (here 367Mi, the e2e's)
// is answered at once: the working set, heading for the new limit within
// MemoryLead, wakes the manager again in the sample that shows the raise,
// though its cooldown has 2s to run. Waiting it out woke the manager with
// the working set 0.8s from the new limit, less than a raise takes, and
// the kernel killed the container first. Each raise here lands by the
// sample after the wake-up that asked for it (the e2e's first did).
func TestShortRaiseWakesBeforeTheCooldownEnds(t *testing.T) {
	f := newFeed(DefaultThresholds())
	ws := ramp(128*mi, 1<<30, 50*mi, t0.Add(3*time.Second+20*time.Millisecond))
	limit, raise := uint64(256*mi), uint64(0)
	var woke []int
	var reps []report.Container
	for i := range 12 {
		at := f.at.Add(time.Second)
		if ws(at) >= limit {
			t.Fatalf("second %d: working set %s reached its %s limit before the raise (woke at %v): OOM killed", i, mib(float64(ws(at))), mib(float64(limit)), woke)
		}
		if raise != 0 {
			limit, raise = raise, 0
		}
		if f.step(cgroup.Sample{WorkingSet: ws(at), MemoryLimit: limit}) {
			woke = append(woke, i)
			c := f.col.Report().Containers[0]
			reps = append(reps, c)
			raise = managerRaise(c)
			if len(woke) == 1 {
				raise = 367 * mi // the short one
			}
		}
	}
	if len(woke) < 2 || woke[0] != 3 || woke[1] != 4 {
		t.Fatalf("woke at seconds %v; want 3 and 4 first: the ramp's first second, then the short raise", woke)
	}
	if c := reps[1]; c.MemoryLimit != 367*mi || !c.MemoryAtRisk || !within(c.MemoryGrowth, 50*mi, 0.05) || !strings.Contains(c.Urgent, "reaches its 367Mi limit") {
		t.Errorf("second wake-up: %+v", c)
	}
}

// A memory risk is not held by a cooldown that CPU wake-ups ran up: a
// container throttled at its CPU limit for half a minute has a cooldown
// of 24s, and a ramp starting then would reach its limit 3s later.
func TestMemoryRiskIsNotHeldByACPUCooldown(t *testing.T) {
	f := newFeed(DefaultThresholds())
	ws := ramp(128*mi, 1<<30, 50*mi, t0.Add(25*time.Second+20*time.Millisecond))
	woke, reps := f.wakes(27, func(i int, at time.Time) cgroup.Sample {
		// A full core against a 200m quota: throttled in 9 of 10 periods.
		s := cpuSample(time.Duration(200*i)*time.Millisecond, uint64(10*i), uint64(9*i))
		s.WorkingSet, s.MemoryLimit = ws(at), 256*mi
		return s
	})
	// CPU: the first throttled second (1), then after 3, 6 and 12 s.
	if len(woke) != 5 || woke[3] != 22 || woke[4] != 25 {
		t.Fatalf("woke at seconds %v; want [1 4 10 22 25]", woke)
	}
	if c := reps[4]; !c.MemoryAtRisk || !strings.HasPrefix(c.Urgent, "memory:") {
		t.Errorf("wake-up at the ramp: %+v", c)
	}
}

// A container held at a limit that does not move (its policy's
// maxAllowed) keeps the cooldown's schedule, however close the limit: a
// leak creeping towards it wakes the manager after 3, 6, 12s, not every
// second it is at risk, and once it stops growing (the kernel holding it
// under the limit) not at all, for ten minutes. A leak that speeds up wakes
// it once more, for the faster course, and not every second after.
func TestMemoryAtAFixedLimitKeepsTheCooldown(t *testing.T) {
	f := newFeed(DefaultThresholds())
	// 1Mi/s from 200Mi; the kernel holds it 1Mi under its 256Mi limit.
	woke, _ := f.wakes(600, func(i int, _ time.Time) cgroup.Sample {
		return cgroup.Sample{WorkingSet: min(200+uint64(i), 255) * mi, MemoryLimit: 256 * mi}
	})
	// Within 10% of 256Mi from 231Mi (second 31); growing until 58.
	if want := []int{31, 34, 40, 52}; !slices.Equal(woke, want) {
		t.Errorf("steady leak woke at seconds %v; want %v", woke, want)
	}

	g := newFeed(DefaultThresholds())
	// 232Mi growing 256Ki a second, within 10% of the limit; from second
	// 12, 2Mi a second.
	ws := func(i int) uint64 {
		if i <= 12 {
			return 232*mi + uint64(i)*mi/4
		}
		return min(235*mi+uint64(i-12)*2*mi, 255*mi)
	}
	woke, reps := g.wakes(600, func(i int, _ time.Time) cgroup.Sample {
		return cgroup.Sample{WorkingSet: ws(i), MemoryLimit: 256 * mi}
	})
	// The cooldown's 3, 6s, then the faster course at 13 (the cooldown
	// would hold it until 22, when the working set is at 255Mi).
	if want := []int{1, 4, 10, 13}; !slices.Equal(woke, want) {
		t.Errorf("leak speeding up woke at seconds %v; want %v", woke, want)
	} else if c := reps[3]; !within(c.MemoryGrowth, 2*mi, 0.01) || !c.MemoryAtRisk {
		t.Errorf("wake-up for the faster course: %+v", c)
	}
}

package replay

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const gib = 1 << 30

func TestShapeInForce(t *testing.T) {
	type inForce struct{ Request, Limit float64 }
	cases := map[string]struct {
		shape Shape
		want  Resources
		own   float64
		out   inForce
	}{
		"1x: limit is the request":        {LimitEqualsRequest, Resources{Memory: 2}, 8, inForce{2, 2}},
		"1x: the policy's own limit":      {LimitEqualsRequest, Resources{Memory: 2, MemoryLimit: 3}, 8, inForce{2, 3}},
		"2x: ratio above the own limit":   {LimitRatioShape(2), Resources{Memory: 2, MemoryLimit: 3}, 8, inForce{2, 4}},
		"2x: own limit above the ratio":   {LimitRatioShape(2), Resources{Memory: 2, MemoryLimit: 5}, 8, inForce{2, 5}},
		"RequestsOnly keeps the limit":    {RequestsOnly, Resources{Memory: 2, MemoryLimit: 3}, 8, inForce{2, 8}},
		"RequestsOnly caps the request":   {RequestsOnly, Resources{Memory: 9}, 8, inForce{8, 8}},
		"RequestsOnly without any limit":  {RequestsOnly, Resources{Memory: 9}, 0, inForce{9, math.Inf(1)}},
		"1x: nothing advised yet":         {LimitEqualsRequest, Resources{}, 8, inForce{0, 0}},
		"2x: own limit without a request": {LimitRatioShape(2), Resources{MemoryLimit: 5}, 8, inForce{0, 5}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req, lim := tc.shape.InForce(tc.want, tc.own)
			if diff := cmp.Diff(tc.out, inForce{req, lim}); diff != "" {
				t.Errorf("InForce (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestShapeValidate(t *testing.T) {
	for _, sh := range []Shape{{Name: "x", LimitRatio: 0.5}, {Name: "x", LimitRatio: math.NaN()}, {LimitRatio: 1}, {Name: "x", LimitRatio: math.Inf(1)}} {
		if err := sh.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", sh)
		}
	}
	if _, err := Run([]Series{makeSeries("a", 8*24*time.Hour, constant(1), constant(1))}, []Policy{lastSeen{}}, Options{Shapes: []Shape{{Name: "bad", LimitRatio: 0.5}}}); err == nil {
		t.Errorf("Run with a bad shape: want an error")
	}
}

// memorySeries is eight days of samples every 5 minutes at 1 GiB, with
// the values in spikes at their sample indices.
func memorySeries(name string, spikes map[int]float64) Series {
	return makeSeries(name, 8*24*time.Hour, constant(1), func(i int) float64 {
		if v, ok := spikes[i]; ok {
			return v
		}
		return 1 * gib
	})
}

func TestMemoryScoring(t *testing.T) {
	// A request of 1.2 GiB and a limit of its own of 2 GiB. After the
	// day of warm-up (288 samples), two samples go over the request only
	// (1.5 GiB), three over the limit too (3 GiB), and one over 2.4 GiB
	// (5 GiB); the VM's own limit is 4 GiB. Samples 288..1439 are before
	// the split (day 5), 1440.. after it.
	s := memorySeries("7", map[int]float64{
		100:  9 * gib, // warm-up: not counted
		300:  1.5 * gib,
		1500: 1.5 * gib,
		400:  3 * gib,
		500:  3 * gib,
		1600: 3 * gib,
		1700: 5 * gib,
	})
	s.MemoryLimit = 4 * gib
	pol := fixed{"fixed", Resources{CPU: 1, Memory: 1.2 * gib, MemoryLimit: 2 * gib}}
	opts := Options{
		Warmup: 24 * time.Hour, MinSpan: 7 * 24 * time.Hour,
		Shapes: []Shape{LimitEqualsRequest, LimitRatioShape(2), RequestsOnly},
		Split:  t0.Add(5 * 24 * time.Hour),
	}
	rep, err := Run([]Series{s}, []Policy{pol}, opts)
	if err != nil {
		t.Fatal(err)
	}
	type counts struct{ Samples, OverRequest, Kills int }
	got := map[string][2]counts{}
	for si, sh := range rep.Shapes {
		h := rep.Series[0].Policies[0].Shapes[si].Halves
		got[sh.Name] = [2]counts{{h[0].Samples, h[0].OverRequest, h[0].Kills}, {h[1].Samples, h[1].OverRequest, h[1].Kills}}
	}
	want := map[string][2]counts{
		// Limit 2 GiB: the 3 and 5 GiB samples are kills.
		"RequestsAndLimits 1x": {{1152, 3, 2}, {865, 3, 2}},
		// Limit 2.4 GiB: the same.
		"RequestsAndLimits 2x": {{1152, 3, 2}, {865, 3, 2}},
		// The VM's 4 GiB: only the 5 GiB sample.
		"RequestsOnly": {{1152, 3, 0}, {865, 3, 1}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("per half (-want,+got):\n%s", diff)
	}
	// 2017 samples after the warm-up: 2011 at 1 GiB and the spikes.
	const n = 2017
	used := (n-6)*gib + 2*1.5*gib + 3*3*gib + 5*gib
	f := rep.Policies[0].Shapes[0]
	wantF := MemoryFigures{Shape: "RequestsAndLimits 1x", RequestsOverUsed: 1.2 * gib * n / used, LimitsOverUsed: 2 * gib * n / used,
		OverRequestPct: 100 * 6.0 / n, OOMKills: 4, OOMKillPct: 100 * 4.0 / n, OOMKillPctP90: 100 * 4.0 / n}
	if diff := cmp.Diff(wantF, f, cmpopts.EquateApprox(1e-9, 0)); diff != "" {
		t.Errorf("whole-trace figures (-want,+got):\n%s", diff)
	}
	// The single value is the request, scored as before.
	if got := rep.Policies[0].Memory.OverPct; math.Abs(got-100*6.0/n) > 1e-9 {
		t.Errorf("single-value over%% = %v, want the samples over the request", got)
	}
	// A subset of the series and a half.
	if got := rep.Memory(0, 2, Subset{Half: 2, Series: func(n string) bool { return n == "7" }}).OOMKills; got != 1 {
		t.Errorf("RequestsOnly kills after the split = %d, want 1", got)
	}
	if got := rep.Memory(0, 2, Subset{Series: func(string) bool { return false }}); got.OOMKills != 0 || got.RequestsOverUsed != 0 {
		t.Errorf("figures of no series = %+v, want zeros", got)
	}
}

// limitTeller provisions a fixed request and records the limit it is told
// was in force.
type limitTeller struct {
	told *[]float64
}

func (l limitTeller) Name() string                    { return "teller" }
func (l limitTeller) Start(*Series) Provisioner       { return l }
func (l limitTeller) Provisioned(time.Time) Resources { return Resources{CPU: 1, Memory: 2} }
func (l limitTeller) Observe(_ Sample, r Resources)   { *l.told = append(*l.told, r.MemoryLimit) }

// blindTeller is limitTeller, shape-blind.
type blindTeller struct{ limitTeller }

func (blindTeller) ShapeBlind() bool { return true }

func TestPolicyToldTheLimitOfItsShape(t *testing.T) {
	s := memorySeries("1", nil)
	s.MemoryLimit = 7
	opts := Options{Warmup: 24 * time.Hour, MinSpan: 7 * 24 * time.Hour, Shapes: []Shape{LimitEqualsRequest, LimitRatioShape(3), RequestsOnly}}
	var told []float64
	if _, err := Run([]Series{s}, []Policy{limitTeller{&told}}, opts); err != nil {
		t.Fatal(err)
	}
	n := len(s.Samples)
	if len(told) != 3*n || told[0] != 2 || told[n] != 6 || told[2*n] != 7 {
		t.Errorf("told %d limits, first of each replay %v, want %d replays of %d: 2, 6 and 7", len(told), []float64{told[0], told[n], told[2*n]}, 3, n)
	}
	told = nil
	if _, err := Run([]Series{s}, []Policy{blindTeller{limitTeller{&told}}}, opts); err != nil {
		t.Fatal(err)
	}
	if len(told) != n {
		t.Errorf("a shape-blind policy replayed %d samples, want one replay of %d", len(told), n)
	}
}

func TestRunPacksEachNodeSize(t *testing.T) {
	// Two VMs of 1 GiB under 1 GiB requests, both at 2 GiB at one sample
	// after the split, under RequestsOnly (no limit of their own): on a
	// 2 GiB node they share it and one is evicted; on 4 GiB nodes 4 GiB
	// fits.
	var series []Series
	for _, name := range []string{"1", "2"} {
		s := Series{Name: name}
		for i := range 8 * 288 {
			mem := 1.0 * gib
			if i == 7*288 {
				mem = 2 * gib
			}
			s.Samples = append(s.Samples, Sample{Time: t0.Add(time.Duration(i) * 5 * time.Minute), CPU: 1, Memory: mem})
		}
		series = append(series, s)
	}
	opts := Options{
		Warmup: 24 * time.Hour, MinSpan: 7 * 24 * time.Hour,
		Shapes:     []Shape{RequestsOnly},
		NodeMemory: []float64{4 * gib, 2 * gib},
		Split:      t0.Add(5 * 24 * time.Hour),
	}
	rep, err := Run(series, []Policy{fixed{"fixed", Resources{CPU: 1, Memory: 1 * gib}}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]int{}
	for ni, m := range rep.NodeMemory {
		for half := range 3 {
			f := rep.Memory(0, 0, Subset{Half: half, Node: ni})
			got[fmt.Sprintf("%g GiB, half %d", m/gib, half)] = [2]int{int(f.Evictions), int(f.Nodes * 10)}
		}
	}
	// Evictions, and mean nodes x10 (truncated): one node of 4 GiB
	// throughout; on 2 GiB nodes one until the eviction at step 2016 and
	// two for the 287 steps after it (the evicted VM is recreated on
	// another node): of the 1728 steps after the warm-up, and of the 864
	// after the split.
	want := map[string][2]int{
		"4 GiB, half 0": {0, 10}, "4 GiB, half 1": {0, 10}, "4 GiB, half 2": {0, 10},
		"2 GiB, half 0": {1, 10 * (1728 + 287) / 1728}, "2 GiB, half 1": {0, 10}, "2 GiB, half 2": {1, 10 * (864 + 287) / 864},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("evictions and nodes by node size and half (-want,+got):\n%s", diff)
	}
	// In any order the pods are placed one of the two is evicted: the
	// mean over three packings is the same.
	opts.Packings = 3
	again, err := Run(series, []Policy{fixed{"fixed", Resources{CPU: 1, Memory: 1 * gib}}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	for ni := range again.NodeMemory {
		for half := range 3 {
			sub := Subset{Half: half, Node: ni}
			if diff := cmp.Diff(rep.Memory(0, 0, sub), again.Memory(0, 0, sub), cmpopts.EquateApprox(1e-12, 0)); diff != "" {
				t.Errorf("node size %d, half %d: three packings (-one,+three):\n%s", ni, half, diff)
			}
		}
	}
	if _, err := Run(series, []Policy{fixed{"fixed", Resources{CPU: 1, Memory: 1 * gib}}}, Options{NodeMemory: []float64{0}}); err == nil {
		t.Errorf("a node of 0 bytes was accepted")
	}
}

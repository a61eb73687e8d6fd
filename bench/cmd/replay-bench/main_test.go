package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tailorhq/tailor/internal/replay"
)

func TestRangeCheck(t *testing.T) {
	spec := &rangeSpec{Policies: map[string]policyRanges{
		"tailor": {
			CPU:    map[string]figureRange{"provisionedOverUsed": {Min: 1, Max: 1.5}, "overPct": {Min: 0, Max: 1}},
			Memory: map[string]figureRange{"overPct": {Min: 0, Max: 0.04}, "bogus": {Min: 0, Max: 1}},
		},
		"missing": {},
	}}
	rep := &replay.Report{Policies: []replay.PolicyResult{{
		Policy: "tailor",
		CPU:    replay.Figures{ProvisionedOverUsed: 1.6, OverPct: 0.5},
		Memory: replay.Figures{OverPct: 0.03},
	}}}
	want := []string{
		"missing: policy not in the report",
		"tailor cpu provisionedOverUsed = 1.6, recorded range [1, 1.5]",
		"tailor memory bogus: no such figure",
	}
	if diff := cmp.Diff(want, spec.check(rep)); diff != "" {
		t.Errorf("check (-want,+got):\n%s", diff)
	}
}

// fixed provisions one memory request from the start.
type fixed float64

func (fixed) Name() string                              { return "fixed" }
func (f fixed) Start(*replay.Series) replay.Provisioner { return f }
func (f fixed) Provisioned(time.Time) replay.Resources {
	return replay.Resources{CPU: 1, Memory: float64(f)}
}
func (fixed) Observe(replay.Sample, replay.Resources) {}

func TestRangeCheckShapes(t *testing.T) {
	// Eight days of 1 GiB under a request of 2 GiB, with one sample of
	// 3 GiB on the last day (after the split): one OOM kill, in the
	// second half.
	t0 := time.Date(2013, 7, 1, 0, 0, 0, 0, time.UTC)
	s := replay.Series{Name: "3"}
	for i := range 8 * 288 {
		mem := float64(1 << 30)
		if i == 8*288-10 {
			mem = 3 << 30
		}
		s.Samples = append(s.Samples, replay.Sample{Time: t0.Add(time.Duration(i) * 5 * time.Minute), CPU: 1, Memory: mem})
	}
	opts := replay.DefaultOptions()
	opts.Shapes = []replay.Shape{replay.LimitEqualsRequest}
	// Packed on 4 GiB nodes, and on 1 GiB nodes, where the 2 GiB request
	// gets a node of 2 GiB of its own.
	opts.NodeMemory = []float64{4 << 30, 1 << 30}
	rep, err := replay.Run([]replay.Series{s}, []replay.Policy{fixed(2 << 30)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	spec := &rangeSpec{Policies: map[string]policyRanges{"fixed": {Shapes: map[string]map[string]map[string]figureRange{
		"RequestsAndLimits 1x": {
			"whole":                      {"oomKills": {Min: 1, Max: 1}, "requestsOverUsed": {Min: 1.9, Max: 2.1}, "nodes": {Min: 1, Max: 1}},
			"1st half":                   {"oomKills": {Min: 1, Max: 1}},
			"even VMs":                   {"oomKills": {Min: 0, Max: 0}, "bogus": {}},
			"3rd half":                   {"oomKills": {}},
			"whole on 1 GiB nodes":       {"nodes": {Min: 1, Max: 1}, "evictions": {Min: 0, Max: 0}},
			"2nd half on 1 GiB nodes":    {"oomKills": {Min: 1, Max: 1}},
			"whole on 4 GiB nodes":       {"nodes": {}},
			"whole on 8 GiB nodes":       {"nodes": {}},
			"whole on lots of GiB nodes": {"nodes": {}},
		},
		"RequestsOnly": {"whole": {"oomKills": {}}},
	}}}}
	noPart := `: no such part (whole, or one of the validation halves, on the first node size or "on N GiB nodes" of another replayed)`
	want := []string{
		"fixed RequestsAndLimits 1x 1st half oomKills = 0, recorded range [1, 1]",
		"fixed RequestsAndLimits 1x 3rd half" + noPart,
		"fixed RequestsAndLimits 1x even VMs bogus: no such figure",
		"fixed RequestsAndLimits 1x whole on 4 GiB nodes" + noPart,
		"fixed RequestsAndLimits 1x whole on 8 GiB nodes" + noPart,
		"fixed RequestsAndLimits 1x whole on lots of GiB nodes" + noPart,
		"fixed RequestsOnly: shape not in the report",
	}
	if diff := cmp.Diff(want, spec.check(rep)); diff != "" {
		t.Errorf("check (-want,+got):\n%s", diff)
	}
}

// named provisions one memory request from the start, under a name.
type named struct {
	name string
	mem  float64
}

func (n named) Name() string                            { return n.name }
func (n named) Start(*replay.Series) replay.Provisioner { return n }
func (n named) Provisioned(time.Time) replay.Resources {
	return replay.Resources{CPU: 1, Memory: n.mem}
}
func (named) Observe(replay.Sample, replay.Resources) {}

func TestPickOnTuningHalf(t *testing.T) {
	// 1 GiB with spikes of 2.2 GiB and 2.7 GiB before the split and of
	// 3.5 GiB after it.
	t0 := time.Date(2013, 7, 1, 0, 0, 0, 0, time.UTC)
	s := replay.Series{Name: "4"}
	for i := range 8 * 288 {
		mem := float64(1 << 30)
		switch i {
		case 500:
			mem = 2.2 * (1 << 30)
		case 600:
			mem = 2.7 * (1 << 30)
		case 2000:
			mem = 3.5 * (1 << 30)
		}
		s.Samples = append(s.Samples, replay.Sample{Time: t0.Add(time.Duration(i) * 5 * time.Minute), CPU: 1, Memory: mem})
	}
	opts := replay.DefaultOptions()
	opts.Shapes = []replay.Shape{replay.LimitEqualsRequest}
	const gib = 1 << 30
	pols := []replay.Policy{
		named{"ref", 2.5 * gib},    // 1 kill before the split, 1 after
		named{"cheap", 2 * gib},    // 2 kills before: not as safe
		named{"dear", 3 * gib},     // 0 before
		named{"dearer", 4 * gib},   // 0 before, dearer still
		named{"middle", 2.8 * gib}, // 0 before: the pick
	}
	rep, err := replay.Run([]replay.Series{s}, pols, opts)
	if err != nil {
		t.Fatal(err)
	}
	first := replay.Subset{Half: 1}
	if got := pickOn(rep, 0, first, 0, 1, 5); got != 4 {
		t.Errorf("pick on the first half = %s, want middle", pols[got].Name())
	}
	// Only the cheap one to choose from: none is as safe as the reference.
	if got := pickOn(rep, 0, first, 0, 1, 2); got != -1 {
		t.Errorf("pick among the unsafe = %d, want -1", got)
	}
	// Held out, every policy has the 3.5 GiB kill: the pick costs more
	// than 0.8x the reference, the cheap one exactly 0.8x.
	second := replay.Subset{Half: 2}
	ref := rep.Memory(0, 0, second)
	if meetsGoal(rep.Memory(4, 0, second), ref) {
		t.Errorf("goal met at %.2fx the reference's requests", rep.Memory(4, 0, second).RequestsOverUsed/ref.RequestsOverUsed)
	}
	if !meetsGoal(rep.Memory(1, 0, second), ref) {
		t.Errorf("goal not met at 0.8x with as many kills and evictions")
	}
	if f := rep.Memory(1, 0, second); meetsGoal(replay.MemoryFigures{RequestsOverUsed: f.RequestsOverUsed, OOMKills: ref.OOMKills + 1}, ref) ||
		meetsGoal(replay.MemoryFigures{RequestsOverUsed: f.RequestsOverUsed, OOMKills: ref.OOMKills, Evictions: ref.Evictions + 1}, ref) {
		t.Errorf("goal met with a kill or an eviction more than the reference")
	}
}

func TestParseNodeSizes(t *testing.T) {
	cases := map[string]struct {
		list    string
		want    []float64
		wantErr bool
	}{
		"both":       {list: "64,32", want: []float64{64 << 30, 32 << 30}},
		"spaces":     {list: " 64 , 32.5 ", want: []float64{64 << 30, 32.5 * (1 << 30)}},
		"one":        {list: "128", want: []float64{128 << 30}},
		"none":       {list: " , ", wantErr: true},
		"zero":       {list: "64,0", wantErr: true},
		"negative":   {list: "-32", wantErr: true},
		"not a size": {list: "64GiB", wantErr: true},
		"infinite":   {list: "Inf", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseNodeSizes(tc.list)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseNodeSizes(%q) error = %v, want error %v", tc.list, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseNodeSizes(%q) (-want,+got):\n%s", tc.list, diff)
			}
		})
	}
}

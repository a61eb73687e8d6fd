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
	rep, err := replay.Run([]replay.Series{s}, []replay.Policy{fixed(2 << 30)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	spec := &rangeSpec{Policies: map[string]policyRanges{"fixed": {Shapes: map[string]map[string]map[string]figureRange{
		"RequestsAndLimits 1x": {
			"whole":    {"oomKills": {Min: 1, Max: 1}, "requestsOverUsed": {Min: 1.9, Max: 2.1}},
			"1st half": {"oomKills": {Min: 1, Max: 1}},
			"even VMs": {"oomKills": {Min: 0, Max: 0}, "bogus": {}},
			"3rd half": {"oomKills": {}},
		},
		"RequestsOnly": {"whole": {"oomKills": {}}},
	}}}}
	want := []string{
		"fixed RequestsAndLimits 1x 1st half oomKills = 0, recorded range [1, 1]",
		"fixed RequestsAndLimits 1x 3rd half: no such part (whole, or one of the validation halves)",
		"fixed RequestsAndLimits 1x even VMs bogus: no such figure",
		"fixed RequestsOnly: shape not in the report",
	}
	if diff := cmp.Diff(want, spec.check(rep)); diff != "" {
		t.Errorf("check (-want,+got):\n%s", diff)
	}
}

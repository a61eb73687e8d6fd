package main

import (
	"testing"

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

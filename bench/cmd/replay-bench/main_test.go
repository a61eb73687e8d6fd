package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tailorhq/tailor/internal/replay"
)

func TestShortDuration(t *testing.T) {
	cases := map[time.Duration]string{
		30 * time.Minute:             "30m",
		48 * time.Hour:               "48h",
		90 * time.Minute:             "1h30m",
		15*time.Minute + time.Second: "15m1s",
	}
	for d, want := range cases {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

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

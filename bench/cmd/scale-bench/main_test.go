package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSizes(t *testing.T) {
	got, err := parseSizes("1000x50x10, 10000x500x1000, 10000x500x1000/2, 10000x500x1000/2@150Mi, 10000x500x1000@200Mi")
	if err != nil {
		t.Fatal(err)
	}
	want := []size{{1000, 50, 10, 1, ""}, {10000, 500, 1000, 1, ""}, {10000, 500, 1000, 2, ""}, {10000, 500, 1000, 2, "150Mi"}, {10000, 500, 1000, 1, "200Mi"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseSizes (-want,+got):\n%s", diff)
	}
	for _, bad := range []string{"1000x50", "1000x0x10", "axbxc", "1000x50x10/0", "1000x50x10/x", "1000x50x10/65", "1000x50x10@lots", "1000x50x10@0"} {
		if _, err := parseSizes(bad); err == nil {
			t.Errorf("parseSizes(%q) accepted", bad)
		}
	}
}

func TestRangeCheck(t *testing.T) {
	hi := func(v float64) *float64 { return &v }
	spec := &rangeSpec{Runs: []runRange{{
		Pods: 1000, Nodes: 50, Policies: 10, Source: "kubelet", Reason: "test",
		Figures: map[string]figureRange{
			"rssPeakBytes":   {Max: hi(100)},
			"scrapesPerSync": {Max: hi(200)},
			"stepResized":    {Min: hi(10)},
			"bogus":          {Max: hi(1)},
		},
	}}}
	res := []*result{
		{Pods: 1000, Nodes: 50, Policies: 10, Source: "kubelet", RSSPeakBytes: 150, ScrapesPerSync: 100, StepResized: 9},
		{Pods: 2000, Nodes: 100, Policies: 100, Source: "kubelet", RSSPeakBytes: 1e12}, // no range recorded: not checked
	}
	got := spec.check(res)
	want := []string{"rssPeakBytes = 150", "stepResized = 9", "bogus is not in the report"}
	if len(got) != len(want) {
		t.Fatalf("check returned %d messages, want %d: %q", len(got), len(want), got)
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.Contains(g, w)
		}
		if !found {
			t.Errorf("no message with %q in %q", w, got)
		}
	}
}

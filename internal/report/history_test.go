package report

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/model"
)

func TestPodPattern(t *testing.T) {
	cases := map[string]struct {
		w          Workload
		match, not []string
	}{
		"a Deployment's pods, of any ReplicaSet": {w: Workload{Kind: "Deployment", Name: "web"},
			match: []string{"web-7c9f8b6d4-x2x9k", "web-5d4b1-abcde"}, not: []string{"web-x2x9k", "web-api-7c9f8-x2x9k-1", "webapp-7c9f8-x2x9k"}},
		"a StatefulSet's": {w: Workload{Kind: "StatefulSet", Name: "db"},
			match: []string{"db-0", "db-12"}, not: []string{"db-a", "db-0-x"}},
		"a DaemonSet's": {w: Workload{Kind: "DaemonSet", Name: "agent"},
			match: []string{"agent-x2x9k"}, not: []string{"agent-7c9f8-x2x9k"}},
		"a bare pod": {w: Workload{Kind: "Pod", Name: "tool"}, match: []string{"tool"}, not: []string{"tool-1"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			re := podPattern(&tc.w)
			for _, m := range tc.match {
				if !re.MatchString(m) {
					t.Errorf("%s does not match %s", re, m)
				}
			}
			for _, n := range tc.not {
				if re.MatchString(n) {
					t.Errorf("%s matches %s", re, n)
				}
			}
		})
	}
}

// At each step the busiest pod's value counts; broken readings are dropped.
func TestMaxMerge(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(m int) model.Time {
		return model.TimeFromUnixNano(t0.Add(time.Duration(m) * time.Minute).UnixNano())
	}
	got := maxMerge(nil, []model.SamplePair{{Timestamp: at(0), Value: 0.1}, {Timestamp: at(5), Value: 0.3}})
	got = maxMerge(got, []model.SamplePair{{Timestamp: at(0), Value: 0.2}, {Timestamp: at(5), Value: 0.1}, {Timestamp: at(10), Value: model.SampleValue(-1)}, {Timestamp: at(15), Value: 0.4}})
	want := []Sample{{Time: t0, Value: 0.2}, {Time: t0.Add(5 * time.Minute), Value: 0.3}, {Time: t0.Add(15 * time.Minute), Value: 0.4}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merged (-want,+got):\n%s", diff)
	}
}

// A series born inside the history has its first rateWindow of rates
// dropped; one already there when the history begins keeps them all.
func TestMatureRates(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(m int) model.Time {
		return model.TimeFromUnixNano(t0.Add(time.Duration(m) * time.Minute).UnixNano())
	}
	points := []model.SamplePair{{Timestamp: at(10), Value: 0.02}, {Timestamp: at(15), Value: 0.1}, {Timestamp: at(20), Value: 0.1}}
	if got := matureRates(points, t0, 5*time.Minute); len(got) != 2 || got[0].Timestamp != at(15) {
		t.Errorf("young series: kept %v", got)
	}
	if got := matureRates(points, t0.Add(10*time.Minute), 5*time.Minute); len(got) != 3 {
		t.Errorf("series older than the history: kept %v", got)
	}
	// A longer rate range (a coarser step) is young for longer.
	if got := matureRates(points, t0, 10*time.Minute); len(got) != 1 || got[0].Timestamp != at(20) {
		t.Errorf("young series under a 10m rate: kept %v", got)
	}
}

package store

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/canary"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/test/builder"
)

// The canary's state comes back from the checkpoint as it went in, to the
// second; a hold ends no sooner for the trip; no state writes no field, and
// a checkpoint without one (written before canaries) restores none.
func TestCanaryCheckpointRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	before := canary.Values{
		"app":                      {Requests: builder.List("500m", "256Mi"), Limits: builder.List("1", "512Mi")},
		podcontainers.PodLevelName: {Requests: builder.List("600m", "300Mi")},
	}
	st := canary.State{
		Pods:      []canary.Pod{{UID: "u0", Name: "web-0", LoweredAt: at, Ready: true, Before: before, Restarts: map[string]int32{"app": 2}}},
		Revert:    []canary.Pod{{UID: "u1", Name: "web-1", LoweredAt: at.Add(-time.Hour), Before: before}},
		Proven:    before,
		HoldUntil: at.Add(time.Hour + 300*time.Millisecond),
		Trips:     3, LastResult: v1alpha1.CanaryReasonRolledBack, Learnt: "canary pod web-1 rolled back",
	}
	data, err := json.Marshal(v1alpha1.TailorCheckpointSpec{PolicyName: "web", PolicyUID: "p", Canary: canaryCheckpoint(st)})
	if err != nil {
		t.Fatal(err)
	}
	var back v1alpha1.TailorCheckpointSpec
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	got := canaryState(back.Canary)
	want := st
	want.HoldUntil = at.Add(time.Hour + time.Second)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("restored state (-want,+got):\n%s", diff)
	}
	if !equality.Semantic.DeepEqual(canaryCheckpoint(got), back.Canary) {
		t.Error("the restored state, written again, differs from what was read: it would be written at every sync")
	}

	if c := canaryCheckpoint(canary.State{}); c != nil {
		t.Errorf("no state written as %+v, want nothing", c)
	}
	var old v1alpha1.TailorCheckpointSpec
	if err := json.Unmarshal([]byte(`{"policyName":"web","policyUID":"p","writeTime":"2026-11-21T12:00:00Z","containers":[]}`), &old); err != nil {
		t.Fatal(err)
	}
	if s := canaryState(old.Canary); !s.IsZero() {
		t.Errorf("a checkpoint written before canaries restores %+v, want none", s)
	}
}

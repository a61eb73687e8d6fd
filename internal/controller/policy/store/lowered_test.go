package store

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/limits"
)

// TestLoweredCheckpointRoundTrip: the budget's count comes back from the
// checkpoint with each time rounded up to the second, so a restart never
// frees the budget early, and written again it is what was read: no write
// at every sync.
func TestLoweredCheckpointRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	st := limits.Lowered{"u1": at, "u0": at.Add(-30*time.Minute + 300*time.Millisecond)}
	data, err := json.Marshal(v1alpha1.TailorCheckpointSpec{PolicyName: "web", PolicyUID: "p", Lowered: loweredCheckpoint(st)})
	if err != nil {
		t.Fatal(err)
	}
	var back v1alpha1.TailorCheckpointSpec
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	got := LoweredState(back.Lowered)
	want := limits.Lowered{"u1": at, "u0": at.Add(-30*time.Minute + time.Second)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("restored count (-want,+got):\n%s", diff)
	}
	if !equality.Semantic.DeepEqual(loweredCheckpoint(got), back.Lowered) {
		t.Error("the restored count, written again, differs from what was read: it would be written at every sync")
	}
	if back.Lowered[0].UID != "u0" {
		t.Errorf("entries %+v, want them sorted by uid: status is deterministic", back.Lowered)
	}
	if loweredCheckpoint(nil) != nil || LoweredState(nil) != nil {
		t.Error("an empty count must be kept as nothing")
	}
}

//go:build controller

package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/dashboard"
)

// The dashboard's history, fed by the controller: a point per sync with the
// usage, request, limit and target, one mark per resize that takes the
// kubelet's outcome when it comes, the pods' requests before (the
// template has none here: a selector policy) and now, and nothing left of
// a deleted policy.
func TestObserverRecordsSyncsAndResizes(t *testing.T) {
	h := dashboard.NewHistory(100, syncPeriod)
	e := newEnv(t, controllerOptions{Observer: h})
	cappedWeb(e)
	e.source.SetThrottled(e.ns, "web-0", "app", 1.0, 200*mi, 0.5)
	e.syncs("web", 3)

	key := types.NamespacedName{Namespace: e.ns, Name: "web"}
	snap, ok := h.Snapshot(key)
	if !ok || len(snap.Series) != 1 {
		t.Fatalf("snapshot %+v", snap)
	}
	se := snap.Series[0]
	if se.Container != "app" || len(se.Time) != 3 {
		t.Fatalf("series for %s with %d points, want app with one per sync (3)", se.Container, len(se.Time))
	}
	// The first point is before the resize, the last after it.
	if first, last := *se.CPURequest[0], *se.CPURequest[2]; first != 0.5 || last != 1.5 {
		t.Errorf("cpu request %v then %v, want 0.5 then 1.5", first, last)
	}
	if u := se.CPUUsage[2]; u == nil || *u != 1 {
		t.Errorf("cpu usage %v, want 1", u)
	}
	if tg := se.CPUTarget[2]; tg == nil || *tg != 1.5 {
		t.Errorf("cpu target %v, want 1.5 (maxAllowed)", tg)
	}
	if len(snap.Marks) != 1 || snap.Marks[0].Pod != "web-0" || snap.Marks[0].Result != string(v1alpha1.ResizeResultDone) || snap.Marks[0].Generation != 2 {
		t.Errorf("marks %+v, want web-0's one resize, Done", snap.Marks)
	}
	if len(snap.Pods) != 1 || snap.Pods[0].CPURequest != 1.5 || snap.Pods[0].BeforeKnown {
		t.Errorf("pods %+v, want web-0 at 1.5 cores, before unknown (no template)", snap.Pods)
	}

	if err := apiClient.Delete(e.ctx, e.getPolicy("web")); err != nil {
		t.Fatal(err)
	}
	e.reconcile("web")
	if _, ok := h.Snapshot(key); ok {
		t.Error("the deleted policy's history is still kept")
	}
}

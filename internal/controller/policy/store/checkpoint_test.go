package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/advise"
	"github.com/tailorhq/tailor/internal/recommend"
)

// TestCheckpointStatesByClass: the workload's states go to containers and
// each node class's to its own entry, by container name (the CRD allows no
// other), sorted and within the CRD's bounds; what is written comes back
// under the keys it was learnt under.
func TestCheckpointStatesByClass(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	m := advise.NewModel(recommend.DefaultConfig())
	keys := []string{"side", "app", advise.Key("app", "m5.large"), advise.Key("_pod", "m5.large"), advise.Key("app", "4cpu-16Gi")}
	for i := range 20 {
		keys = append(keys, advise.Key("app", fmt.Sprintf("z%02d", i)))
	}
	rec, err := recommend.New(recommend.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		st := rec.NewState()
		st.AddSample(recommend.Sample{CPU: 0.1, Memory: 1 << 27}, at)
		m.Containers[k] = &advise.Container{State: st, Fed: at, Changed: at}
	}
	var spec v1alpha1.TailorCheckpointSpec
	if err := checkpointStates(m, keys, &spec); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range spec.Containers {
		got = append(got, c.Name)
	}
	if diff := cmp.Diff([]string{"app", "side"}, got); diff != "" {
		t.Errorf("workload-wide entries (-want,+got):\n%s", diff)
	}
	if len(spec.NodeClasses) != maxCheckpointClasses {
		t.Fatalf("%d classes written, want the CRD's %d", len(spec.NodeClasses), maxCheckpointClasses)
	}
	first := spec.NodeClasses[:2]
	if first[0].Class != "4cpu-16Gi" || first[1].Class != "m5.large" || len(first[1].Containers) != 2 || first[1].Containers[0].Name != "_pod" {
		t.Errorf("first classes %+v, want 4cpu-16Gi then m5.large with _pod and app", first)
	}
	back := advise.NewModel(recommend.DefaultConfig())
	for _, c := range spec.NodeClasses {
		for _, cc := range c.Containers {
			if err := back.Restore(&v1alpha1.TailorPolicySpec{}, advise.Key(cc.Name, c.Class), cc.State, cc.UpdateTime.Time); err != nil {
				t.Fatalf("restore %s on %s: %v", cc.Name, c.Class, err)
			}
		}
	}
	if _, ok := back.Containers[advise.Key("app", "m5.large")]; !ok {
		t.Errorf("restored keys %v lack app on m5.large", back.Containers)
	}
}

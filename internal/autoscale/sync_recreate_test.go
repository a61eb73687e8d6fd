package autoscale

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/placement"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
)

// DecideSync decides the recreation of the pods short of room with the rest
// of the sync: it asks for every node only when a pod needs them, records a
// replacement's resources, evicts at most one pod per minResizeInterval
// (this sync's eviction pacing the next pod), and starts each pod's run of
// shortfall.
func TestDecideSyncRecreation(t *testing.T) {
	mk := func(name string) *corev1.Pod {
		return builder.Pod(name).UID(name).Node("n1").Owner("ReplicaSet", "web-"+name, "rs-"+name).Container(burstable()).Obj()
	}
	a, b := mk("a"), mk("b")
	template := &corev1.PodTemplateSpec{Spec: builder.Pod("t").Container(burstable()).Obj().Spec}
	full := nodeState("200m", "1Gi", a, b) // no room for any raise
	big := []placement.NodePods{{Node: builder.Node("n2").Allocatable("8", "16Gi").Ready(corev1.ConditionTrue).Obj()}}
	in := SyncInput{
		PolicyInput: fleet.PolicyInput{
			Spec: spec(func(s *v1alpha1.TailorPolicySpec) {
				s.UpdatePolicy = &v1alpha1.UpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlaceOrRecreate}
				s.Behavior = &v1alpha1.Behavior{MaxConcurrentResizes: ptr(int32(2))}
			}),
			Pods: []fleet.PodInput{
				{Pod: a, Targets: map[string]podchange.Target{"app": {CPU: q("1")}}, RaiseSince: now.Add(-2 * time.Minute)},
				{Pod: b, Targets: map[string]podchange.Target{"app": {CPU: q("1")}}, RaiseSince: now.Add(-time.Minute)},
			},
			Nodes: map[string]*resize.NodeState{"n1": full}, Server: v137, MemoryFloorHeadroom: 0.1, Now: now,
		},
		Settle: time.Second,
		Recreation: RecreationState{
			RecreateAfter: 5 * time.Minute, Template: template, Generation: 1,
			ShortSince: map[types.UID]time.Time{a.UID: now.Add(-10 * time.Minute), b.UID: now.Add(-10 * time.Minute)},
		},
	}
	steps := func(d SyncDecision) []string {
		var out []string
		for _, s := range d.Recreate {
			out = append(out, s.Pod.Name+" "+string(s.Step)+" "+s.Reason)
		}
		return out
	}

	// decide decides the sync with every node, when it asks for them.
	decide := func(in SyncInput) SyncDecision {
		t.Helper()
		d, wanted, err := DecideSync(in)
		if err == nil && wanted != nil {
			d, err = wanted.Decide(big)
		}
		if err != nil {
			t.Fatal(err)
		}
		return *d
	}

	d, wanted, err := DecideSync(in)
	if err != nil {
		t.Fatal(err)
	}
	if wanted == nil {
		t.Fatalf("no nodes asked for; recreation steps %v", steps(*d))
	}
	if d != nil {
		t.Fatalf("a decision returned with the nodes asked for: recreation steps %v", steps(*d))
	}
	first, err := wanted.Decide(big)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a Record ", "b Record "}, steps(*first)); diff != "" {
		t.Errorf("first decision (-want,+got):\n%s", diff)
	}

	// Both entries stood their settle time: a is evicted, b waits its turn.
	in.Now = now.Add(2 * time.Second)
	in.Recreation.Entries = map[types.UID]v1alpha1.Recreation{}
	for _, s := range first.Recreate {
		in.Recreation.Entries[s.Owner.UID] = v1alpha1.Recreation{OwnerUID: string(s.Owner.UID), EvictedPod: s.Pod.Name,
			EvictionTime: metav1.NewTime(now), ObservedGeneration: 1, Containers: s.Containers}
	}
	second := decide(in)
	if diff := cmp.Diff([]string{"a Evict ", "b Wait EvictionPaced"}, steps(second)); diff != "" {
		t.Errorf("second decision (-want,+got):\n%s", diff)
	}

	// A pod that was not short before starts its run now.
	in.Recreation.ShortSince = nil
	for _, s := range decide(in).Recreate {
		if !s.ShortSince.Equal(in.Now) || s.Step != placement.RecreateWait {
			t.Errorf("pod %s: short since %s, step %s; want its run started now and a wait", s.Pod.Name, s.ShortSince, s.Step)
		}
	}
}

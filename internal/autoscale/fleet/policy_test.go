package fleet

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
)

func TestDecidePolicyServesRaisesFirstAndSharesNodeRoom(t *testing.T) {
	mk := func(name string) *corev1.Pod {
		return builder.Pod(name).Node("n1").Container(builder.Container("app").Requests("100m", "64Mi").Limits("200m", "128Mi")).Obj()
	}
	a, b, c := mk("a"), mk("b"), mk("c")
	// 300m free: a and b each want 200m more, c wants less.
	node := nodeState("600m", "1Gi", a, b, c)
	in := PolicyInput{
		Spec: spec(func(s *v1alpha1.TailorPolicySpec) {
			s.Behavior = &v1alpha1.Behavior{MaxConcurrentResizes: ptr(int32(3))}
		}),
		Pods: []PodInput{
			{Pod: c, Targets: map[string]podchange.Target{"app": {CPU: q("20m")}}},
			{Pod: b, Targets: map[string]podchange.Target{"app": {CPU: q("300m")}}, RaiseSince: now.Add(-time.Minute)},
			{Pod: a, Targets: map[string]podchange.Target{"app": {CPU: q("300m")}}, RaiseSince: now.Add(-2 * time.Minute)},
		},
		Nodes: map[string]*resize.NodeState{"n1": node}, Server: v137, MemoryFloorHeadroom: 0.1, Now: now,
	}
	d, err := DecidePolicy(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a app.cpu=300m;", "b app.cpu=200m;", "c app.cpu=20m;"}
	if diff := cmp.Diff(want, sent(d)); diff != "" {
		t.Errorf("resizes (-want,+got):\n%s", diff)
	}
}

func TestDecidePolicyHoldsWhatItCannotDoAndGoesOn(t *testing.T) {
	ok := builder.Pod("ok").Node("n1").Container(burstable()).Obj()
	lost := builder.Pod("lost").Node("gone").Container(burstable()).Obj()
	busy := builder.Pod("busy").Node("n1").Container(burstable()).Obj()
	in := PolicyInput{
		Spec: spec(func(s *v1alpha1.TailorPolicySpec) {
			s.Behavior = &v1alpha1.Behavior{MaxConcurrentResizes: ptr(int32(3))}
		}),
		Pods: []PodInput{
			{Pod: busy, Targets: map[string]podchange.Target{"app": {CPU: q("1")}}, InFlight: true},
			{Pod: lost, Targets: map[string]podchange.Target{"app": {CPU: q("1")}}},
			{Pod: ok, Targets: map[string]podchange.Target{"app": {CPU: q("1")}}},
		},
		Nodes: map[string]*resize.NodeState{"n1": nodeState("4", "4Gi", ok, busy)}, Server: v137, Now: now,
	}
	d, err := DecidePolicy(in)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ok app.cpu=1;"}, sent(d)); diff != "" {
		t.Errorf("resizes (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"busy InFlight", "lost NodeUnknown"}, held(d)); diff != "" {
		t.Errorf("held (-want,+got):\n%s", diff)
	}
}

// TestManyReplicasLowerOneRoundTripEach is finding 6 of the controller v2
// issue: 100 idle replicas with maxConcurrentResizes 1 are lowered one per
// resize round trip, since a pod held for concurrency keeps its place.
func TestManyReplicasLowerOneRoundTripEach(t *testing.T) {
	const n = 100
	var pods []PodInput
	var all []*corev1.Pod
	for i := range n {
		p := builder.Pod(fmt.Sprintf("web-%03d", i)).Node("n1").Container(burstable()).Obj()
		all = append(all, p)
		pods = append(pods, PodInput{Pod: p, Targets: map[string]podchange.Target{"app": {CPU: q("50m")}}})
	}
	in := PolicyInput{Spec: spec(), Pods: pods, Nodes: map[string]*resize.NodeState{"n1": nodeState("64", "64Gi", all...)},
		Server: v137, MemoryFloorHeadroom: 0.1, Now: now}
	lowered := map[string]bool{}
	syncs := 0
	for len(lowered) < n && syncs < 3*n {
		syncs++
		d, err := DecidePolicy(in)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Resizes) > 1 {
			t.Fatalf("sync %d sent %d resizes with maxConcurrentResizes 1", syncs, len(d.Resizes))
		}
		// The round trip: sent, then in flight for one sync, then done.
		for i := range in.Pods {
			p := &in.Pods[i]
			if p.InFlight {
				p.InFlight = false
				p.Targets = nil
			}
		}
		for _, a := range d.Resizes {
			for i := range in.Pods {
				if in.Pods[i].Pod.Name == a.Pod.Name {
					in.Pods[i].InFlight, in.Pods[i].LastResize = true, in.Now
					lowered[a.Pod.Name] = true
				}
			}
		}
		in.Now = in.Now.Add(2 * time.Second)
	}
	if len(lowered) != n {
		t.Fatalf("lowered %d of %d pods in %d syncs", len(lowered), n, syncs)
	}
	if syncs > 2*n {
		t.Errorf("took %d syncs for %d pods, want at most two per pod (send, then see it finish)", syncs, n)
	}
	t.Logf("%d replicas lowered in %d syncs", n, syncs)
}

func TestDecidePolicyHoldsWhatThePlannerRefuses(t *testing.T) {
	// A memory limit lowered on 1.33 without RestartContainer is refused.
	p := builder.Pod("p").Node("n1").Container(burstable()).Obj()
	in := PolicyInput{Spec: spec(), Pods: []PodInput{{Pod: p, Targets: map[string]podchange.Target{"app": {Memory: q("64Mi")}},
		WorkingSet: map[string]resource.Quantity{"app": resource.MustParse("20Mi")}}},
		Nodes: map[string]*resize.NodeState{"n1": nodeState("4", "4Gi", p)}, Server: resize.Version{Major: 1, Minor: 33}, MemoryFloorHeadroom: 0.1, Now: now}
	d, err := DecidePolicy(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Resizes) != 0 || len(d.Held) != 1 || d.Held[0].Reason != HoldRefused || d.Held[0].Rule != resize.RuleMemoryLimitDecrease {
		t.Fatalf("resizes %v held %+v, want the change held as refused by %s", sent(d), d.Held, resize.RuleMemoryLimitDecrease)
	}
}

package fleet

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/preemption"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
)

// A raise no room in place could be made for, on a 2-core node a busy
// high-priority pod shares with a low-priority filler and a pod of its own
// priority: with Preempt it is sent whole, as far as the filler's requests
// could free, and names the filler as the scheduler's victim; never past
// what the pods of equal or higher priority hold, and without Preempt
// (the policy's or the manager's no) it is cut to the free room as ever.
// Where the scheduler would not preempt (the pod's preemptionPolicy is
// Never), nothing beyond the free room is sent and the hold says why.
func TestPreemptSendsTheRaiseTheSchedulerWouldMakeRoomFor(t *testing.T) {
	withPriority := func(p *corev1.Pod, prio int32) *corev1.Pod { p.Spec.Priority = ptr(prio); return p }
	busy := withPriority(builder.Pod("busy").UID("busy").Node("n1").Container(builder.Container("app").Requests("500m", "128Mi").Limits("1", "256Mi")).Obj(), 1000)
	filler := withPriority(builder.Pod("filler").UID("filler").Node("n1").Container(builder.Container("app").Requests("1", "128Mi")).Obj(), 0)
	peer := withPriority(builder.Pod("peer").UID("peer").Node("n1").Container(builder.Container("app").Requests("300m", "128Mi")).Obj(), 1000)
	// 200m free; the filler holds 1 core more.
	node := func(pods ...*corev1.Pod) *resize.NodeState {
		n := nodeState("2", "4Gi", pods...)
		n.Name = "n1"
		return n
	}
	decide := func(p *corev1.Pod, preempt bool, n *resize.NodeState) PolicyDecision {
		t.Helper()
		d, err := DecidePolicy(PolicyInput{Spec: spec(func(s *v1alpha1.TailorPolicySpec) {
			s.Behavior = &v1alpha1.Behavior{ScaleUp: &v1alpha1.ScaleUpRules{Preemption: v1alpha1.ResizePreemptionLowerPriority}}
		}), Pods: []PodInput{{Pod: p, Targets: map[string]podchange.Target{"app": {CPU: q("2")}}, Preempt: preempt}},
			Nodes: map[string]*resize.NodeState{"n1": n}, Server: v137, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	d := decide(busy, true, node(busy, filler, peer))
	if diff := cmp.Diff([]string{"busy app.cpu=1700m;"}, sent(d)); diff != "" {
		t.Errorf("with Preempt (-want,+got):\n%s", diff)
	}
	if len(d.Resizes) != 1 || d.Resizes[0].Preemption == nil || d.Resizes[0].Preemption.Reason != preemption.Preempts ||
		len(d.Resizes[0].Preemption.Victims) != 1 || d.Resizes[0].Preemption.Victims[0].Pod.Name != "filler" {
		t.Errorf("resizes %v, preemption %+v: want one whose expected victim is the filler", sent(d), d.Resizes[0].Preemption)
	} else if d.Resizes[0].Plan.Predicted != resize.Deferred {
		t.Errorf("the raise beyond the free room is predicted %s, want Deferred", d.Resizes[0].Plan.Predicted)
	}

	d = decide(busy, false, node(busy, filler, peer))
	if diff := cmp.Diff([]string{"busy app.cpu=700m;"}, sent(d)); diff != "" || d.Resizes[0].Preemption != nil {
		t.Errorf("without Preempt, want the raise cut to the free 200m (-want,+got):\n%s", diff)
	}

	never := busy.DeepCopy()
	never.Spec.PreemptionPolicy = ptr(corev1.PreemptNever)
	d = decide(never, true, node(never, filler, peer))
	if len(d.Resizes) != 0 || len(d.Held) != 1 || d.Held[0].Reason != HoldNoRoom || !strings.Contains(d.Held[0].Message, "preemptionPolicy is Never") {
		t.Errorf("a pod the scheduler preempts for never: resizes %v, held %+v; want it held NodeFull saying why", sent(d), d.Held)
	}
}

// A raise sent for the scheduler to preempt for that the kubelet still
// defers after PreemptionPatience is taken back to what the pod runs
// with, for a policy that preempts; before the patience ends, or for a
// policy that does not, the pod waits as any pod in flight does.
func TestDeferredPreemptingRaiseIsCutBack(t *testing.T) {
	p := builder.Pod("busy").Node("n1").Container(builder.Container("app").Requests("2", "128Mi").Limits("4", "256Mi")).Obj()
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Resources: &corev1.ResourceRequirements{
		Requests: builder.List("500m", "128Mi"), Limits: builder.List("1", "256Mi")}}}
	preempts := spec(func(s *v1alpha1.TailorPolicySpec) {
		s.Behavior = &v1alpha1.Behavior{ScaleUp: &v1alpha1.ScaleUpRules{Preemption: v1alpha1.ResizePreemptionLowerPriority}}
	})
	for name, tc := range map[string]struct {
		spec     *v1alpha1.TailorPolicySpec
		deferred time.Time
		target   string
		want     []string
	}{
		"deferred past the patience":   {spec: preempts, deferred: now.Add(-PreemptionPatience), want: []string{"busy app.cpu=500m;"}},
		"its wish what it was sent":    {spec: preempts, deferred: now.Add(-PreemptionPatience), target: "2", want: []string{"busy app.cpu=500m;"}},
		"deferred within the patience": {spec: preempts, deferred: now.Add(-PreemptionPatience + time.Second)},
		"a policy that never preempts": {spec: spec(), deferred: now.Add(-time.Hour)},
		"not deferred":                 {spec: preempts},
	} {
		t.Run(name, func(t *testing.T) {
			target := "3"
			if tc.target != "" {
				target = tc.target
			}
			d, err := DecidePolicy(PolicyInput{Spec: tc.spec, Pods: []PodInput{{Pod: p, Targets: map[string]podchange.Target{"app": {CPU: q(target)}},
				InFlight: true, Deferred: tc.deferred}}, Nodes: map[string]*resize.NodeState{"n1": nodeState("2", "4Gi", p)}, Server: v137, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, sent(d)); diff != "" {
				t.Errorf("resizes (-want,+got):\n%s", diff)
			}
			if len(tc.want) > 0 {
				a := d.Resizes[0]
				if !a.CutBack || a.Decision.Changes[0].LimitNow.String() != "1" {
					t.Errorf("cut back %+v: want the limit back at 1 and the action marked CutBack", a)
				}
				return
			}
			if len(d.Held) != 1 || d.Held[0].Reason != HoldInFlight {
				t.Errorf("held %v, want the pod waiting in flight", held(d))
			}
		})
	}
}

//go:build controller

package controller

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/controller/policy/act"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/internal/preemption"
	"github.com/tailorhq/tailor/test/builder"
)

// preemptNode makes a 3-core node with the busy pod busy-0 (priority
// room-high, 1 core, throttled at its 1-core limit, its policy allowing up
// to 3 cores and asking for preemption) beside filler-0, a pod of priority
// room-low that requests the other 2 cores and that no policy manages:
// no room can be made in place, and the scheduler would preempt the filler
// for busy-0's raise.
func preemptNode(e *env) {
	e.t.Helper()
	roomPriorityClasses(e)
	node := e.addNode(e.node+"-pre", "3", "8Gi")
	e.pod("busy", builder.Pod("busy-0").Node(node).PriorityClass("room-high").
		Container(builder.Container("app").Requests("1", "256Mi").Limits("1", "512Mi")))
	e.source.SetThrottled(e.ns, "busy-0", "app", 1.0, 200*mi, 0.8)
	e.policy("busy", func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "app", MaxAllowed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")},
		}}}
		s.Behavior = &v1alpha1.Behavior{ScaleUp: &v1alpha1.ScaleUpRules{Preemption: v1alpha1.ResizePreemptionLowerPriority}}
	})
	e.pod("filler", builder.Pod("filler-0").Node(node).PriorityClass("room-low").
		Container(builder.Container("app").Requests("2", "256Mi").Limits("2", "512Mi")))
	e.source.Set(e.ns, "filler-0", "app", 1.9, 200*mi)
}

// untilPreemptionSent syncs until busy-0's raise is sent beyond the node's
// free room, and returns its cpu request then.
func untilPreemptionSent(e *env) string {
	e.t.Helper()
	for range 6 {
		e.roomSync("busy")
		if got := requestOf(e.getPod("busy-0"), "app", corev1.ResourceCPU); got != "1" {
			return got
		}
	}
	e.t.Fatalf("busy-0's raise never sent for the scheduler to preempt for:%s", e.events)
	return ""
}

// With the policy asking for it and the manager allowing it, a raise no
// room in place can be made for is sent beyond the node's free room once
// room-making has found none; the kubelet defers it, and the event names
// the pod the scheduler is expected to preempt. Where the scheduler does
// (here the test evicts the filler in its place), the kubelet applies the
// raise and nothing is taken back.
func TestPreemptionSentWhereNoRoomCanBeMade(t *testing.T) {
	e := newEnv(t, controllerOptions{AllowPreemption: true})
	preemptNode(e)
	raised := untilPreemptionSent(e)
	if q := resource.MustParse(raised); q.Cmp(resource.MustParse("1")) <= 0 || q.Cmp(resource.MustParse("3")) > 0 {
		t.Fatalf("busy-0 sent %s, want a raise above its 1 core, within maxAllowed 3", raised)
	}
	if p := e.getPod("busy-0"); !deferredResize(p) {
		t.Fatalf("the kubelet did not defer the raise beyond the node's free room: %+v", p.Status.Conditions)
	}
	if !hasEvent(e, "busy-0", act.EventPreemptionExpected, e.ns+"/filler-0 (priority 10)") {
		t.Errorf("no PreemptionExpected event on busy-0 naming filler-0:%s", e.events)
	}
	// The scheduler preempts the filler; the kubelet retries the deferred
	// resize and applies it.
	e.deletePod("filler-0")
	e.kubelet.Sync(t, e.ns)
	for range 8 {
		e.roomSync("busy")
	}
	// Still throttled, it goes on growing in the room the filler left.
	p := e.getPod("busy-0")
	if got := resource.MustParse(requestOf(p, "app", corev1.ResourceCPU)); got.Cmp(resource.MustParse(raised)) < 0 || deferredResize(p) {
		t.Errorf("busy-0 cpu request %s (deferred %v), want the raise to %s applied", got.String(), deferredResize(p), raised)
	}
	if n := e.events.count("busy-0", act.EventResizeCutBack); n != 0 {
		t.Errorf("a raise the kubelet applied was cut back:%s", e.events)
	}
}

// Where the scheduler does not preempt (its feature gate off, which the
// controller tier stands for: it runs no scheduler), the raise stays
// deferred; after fleet.PreemptionPatience it is taken back to what the
// pod runs with, and no other is sent for fleet.PreemptionBackoff.
func TestDeferredPreemptionIsTakenBack(t *testing.T) {
	e := newEnv(t, controllerOptions{AllowPreemption: true})
	preemptNode(e)
	untilPreemptionSent(e)
	sent := e.elapsed()
	for e.elapsed()-sent < fleet.PreemptionPatience+3*syncPeriod {
		e.roomSync("busy")
	}
	p := e.getPod("busy-0")
	if got := requestOf(p, "app", corev1.ResourceCPU); got != "1" || deferredResize(p) {
		t.Fatalf("busy-0 cpu request %s (deferred %v) %s after the raise, want it taken back to 1", got, deferredResize(p), e.elapsed()-sent)
	}
	if !hasEvent(e, "busy-0", act.EventResizeCutBack, "taken back") {
		t.Errorf("no ResizeCutBack event on busy-0:%s", e.events)
	}
	for range 5 {
		e.roomSync("busy")
	}
	if n := e.events.count("busy-0", act.EventPreemptionExpected); n != 1 {
		t.Errorf("%d raises sent for the scheduler to preempt for, want 1 within the backoff:%s", n, e.events)
	}
	if got := requestOf(e.getPod("busy-0"), "app", corev1.ResourceCPU); got != "1" {
		t.Errorf("busy-0 at %s within the backoff, want 1", got)
	}
}

// Without --allow-resize-preemption nothing is sent beyond the node's free
// room, whatever the policy asks, and ResizesBlocked says why.
func TestPreemptionNeedsTheManagersConsent(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	heldWithoutPreemption(e, "--allow-resize-preemption")
}

// heldWithoutPreemption syncs preemptNode's busy pod, which must not be
// raised beyond the node's free room nor any preemption expected, with
// ResizesBlocked saying each of says.
func heldWithoutPreemption(e *env, says ...string) {
	e.t.Helper()
	preemptNode(e)
	for range 6 {
		e.roomSync("busy")
	}
	if got := requestOf(e.getPod("busy-0"), "app", corev1.ResourceCPU); got != "1" {
		e.t.Errorf("busy-0 raised to %s on a full node", got)
	}
	if n := e.events.count("", act.EventPreemptionExpected); n != 0 {
		e.t.Errorf("raise sent for the scheduler to preempt for:%s", e.events)
	}
	c := condition(e.getPolicy("busy"), v1alpha1.ConditionResizesBlocked)
	if c == nil || c.Status != metav1.ConditionTrue {
		e.t.Fatalf("ResizesBlocked %+v, want it true", c)
	}
	for _, s := range says {
		if !strings.Contains(c.Message, s) {
			e.t.Errorf("ResizesBlocked says %q, want it to say %q", c.Message, s)
		}
	}
}

// The envtest apiserver runs with InPlacePodVerticalScalingSchedulerPreemption
// off, as a 1.37 cluster does by default: the manager reads that from the
// apiserver, and a policy asking for preemption on a manager allowing it is
// held as if the manager did not, saying why, instead of sending a raise
// the kubelet would defer and no scheduler make room for.
func TestPreemptionNeedsTheSchedulersGate(t *testing.T) {
	why := manager.PreemptionUnavailable(context.Background(), discovery.NewDiscoveryClientForConfigOrDie(restConfig).RESTClient())
	if !strings.Contains(why, preemption.Gate+" off") {
		t.Fatalf("the manager read %q of the envtest apiserver's feature gates, want %s off", why, preemption.Gate)
	}
	e := newEnv(t, controllerOptions{AllowPreemption: true, PreemptionUnavailable: why})
	heldWithoutPreemption(e, "does not preempt", preemption.Gate+" off")
}

// deferredResize says whether the kubelet defers the pod's resize.
func deferredResize(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodResizePending && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonDeferred {
			return true
		}
	}
	return false
}

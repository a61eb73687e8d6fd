package act

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/room"
	"github.com/tailorhq/tailor/internal/controller/policy/store"
	"github.com/tailorhq/tailor/internal/jvm"
	"github.com/tailorhq/tailor/internal/podchange"
)

// Event reasons, on pods and on the policy.
const (
	EventResized        = "Resized"
	EventResizeDeferred = "ResizeDeferred"
	EventResizeRefused  = "ResizeRefused"
	EventResizeSkipped  = "ResizeSkipped"
	EventResizeFailed   = "ResizeFailed"
	// The metrics source: down (no usage at all), back, or leaving some
	// containers without usable figures (missing, stale, or none a
	// container can have: NaN, negative, beyond its node).
	EventMetricsUnavailable = "MetricsUnavailable"
	EventMetricsRestored    = "MetricsRestored"
	EventMetricsIncomplete  = "MetricsIncomplete"
	// EventResizeCapped: a raise was cut to what the node has room for.
	EventResizeCapped = "ResizeCapped"
	// EventMemoryAtRisk: the node agent saw a container's working set on
	// course for its memory limit, and tailor cannot raise it.
	EventMemoryAtRisk = "MemoryAtRisk"
	// EventJVMMemoryWasted: a JVM's memory limit is well above what its
	// heap may reach, which the heap can never use; EventJVMHeapAtMaximum:
	// a JVM holds its whole heap and the recommendation asks for more
	// than the heap reaches, which a raise cannot give it. Each names the
	// heap option a restart should carry (jvm.JudgeFit).
	EventJVMMemoryWasted  = "JVMMemoryWasted"
	EventJVMHeapAtMaximum = "JVMHeapAtMaximum"
	// EventCheckpointInvalid: the policy's checkpoint could not be read
	// back; the event says what was lost.
	EventCheckpointInvalid = "CheckpointInvalid"
	// EventConflict and EventVerticalPodAutoscaler say, once when it
	// starts, that another TailorPolicy or a VerticalPodAutoscaler sizes
	// some of the policy's pods.
	EventConflict              = "Conflict"
	EventVerticalPodAutoscaler = "VerticalPodAutoscaler"
	// EventRoomAsked: a raise its node has no room for asked room of the
	// pods of lower priority beside it; EventRoomGiven: a pod was lowered
	// before its stabilization window ended to make that room;
	// EventRoomMade: the raise was sent in the room they gave. Each names
	// the pods on the other side.
	EventRoomAsked = "RoomAsked"
	EventRoomGiven = "RoomGiven"
	EventRoomMade  = "RoomMade"
	// EventPreemptionExpected: a raise no room in place could be made for
	// was sent beyond the node's free room (behavior.scaleUp.preemption),
	// for the scheduler to preempt the pods it names; EventResizeCutBack:
	// such a raise stayed deferred past fleet.PreemptionPatience and was
	// taken back to what the pod runs with.
	EventPreemptionExpected = "PreemptionExpected"
	EventResizeCutBack      = "ResizeCutBack"
	// EventPreemptionNotAllowed is the ResizesBlocked reason of a policy
	// whose behavior.scaleUp.preemption the manager does not allow.
	EventPreemptionNotAllowed = "PreemptionNotAllowed"
)

// reportPreemption says, of a resize sent, that it was sent for the
// scheduler to preempt for, and whom it is expected to; or that it takes
// back such a raise, which starts the pod's PreemptionBackoff.
func (r *Actor) reportPreemption(policy *v1alpha1.TailorPolicy, ps *store.PodState, a fleet.Action, now time.Time) {
	switch {
	case a.Preemption != nil:
		r.Events.Eventf(a.Pod, policy, corev1.EventTypeWarning, EventPreemptionExpected, "Resize",
			"raise sent beyond the node's free room, which no pod of lower priority tailor manages could give in place; the kubelet defers it, and %s (behavior.scaleUp.preemption)",
			a.Preemption.Message)
	case a.CutBack:
		ps.CutBackAt = now
		r.Events.Eventf(a.Pod, policy, corev1.EventTypeWarning, EventResizeCutBack, "Resize",
			"the raise sent for the scheduler to preempt for stayed deferred for %s or more: taken back to what the pod runs with; no such raise is sent it again for %s",
			fleet.PreemptionPatience, fleet.PreemptionBackoff)
	}
}

// withRoom is a pod's decision and hold with what was asked for room, or
// why none could be made, added to what its node's room held back.
func withRoom(dec podchange.Decision, h fleet.Held, a autoscale.RoomAsk) (podchange.Decision, fleet.Held) {
	text := a.Text()
	if text == "" {
		return dec, h
	}
	skips := make([]podchange.Skip, len(dec.Skips))
	for i, s := range dec.Skips {
		if s.Reason == podchange.SkipNoRoom {
			s.Message += "; " + text
		}
		skips[i] = s
	}
	dec.Skips = skips
	if h.Reason == fleet.HoldNoRoom {
		h.Message += "; " + text
	}
	return dec, h
}

// reportRoomAsked says once per set of donors that room was asked of them
// for the pod.
func (r *Actor) reportRoomAsked(policy *v1alpha1.TailorPolicy, ps *store.PodState, a autoscale.RoomAsk) {
	if len(a.Asks) == 0 {
		return
	}
	key := "roomasked"
	for _, ask := range a.Asks {
		key += ":" + ask.Donor.Namespace + "/" + ask.Donor.Name
	}
	if ps.Report(key) {
		r.Events.Eventf(a.Pod, policy, corev1.EventTypeNormal, EventRoomAsked, "Resize", "%s", a.Text())
	}
}

// reportRoom says, on each pod lowered early to make room, for whom; and
// on each pod raised in the room made, who gave it. Only resizes sent
// count.
func (r *Actor) reportRoom(policy *v1alpha1.TailorPolicy, o autoscale.RoomOutcome, sent map[types.UID]bool) {
	for _, g := range o.Given {
		if sent[g.Pod.UID] {
			r.Events.Eventf(g.Pod, policy, corev1.EventTypeNormal, EventRoomGiven, "Resize",
				"lowered to what it needs before its scale-down stabilization window ended, to make room for %s (priority %d): %s asked",
				g.For, g.Priority, room.Text(g.Amount))
		}
	}
	for _, m := range o.Made {
		if !sent[m.Pod.UID] {
			continue
		}
		names := make([]string, 0, len(m.Donors))
		for _, d := range m.Donors {
			names = append(names, d.String())
		}
		r.Events.Eventf(m.Pod, policy, corev1.EventTypeNormal, EventRoomMade, "Resize",
			"raised in place in the room %s gave", strings.Join(names, ", "))
	}
}

// reportOnce emits an event for a pod's state the first time it is seen,
// and says whether it did, so counters count states, not syncs.
func (r *Actor) reportOnce(ps *store.PodState, p *corev1.Pod, policy *v1alpha1.TailorPolicy, key, reason, msg string) bool {
	if !ps.Report(key) {
		return false
	}
	r.Events.Eventf(p, policy, corev1.EventTypeWarning, reason, "Resize", "%s", msg)
	return true
}

// reportHeap says once, while it stands, what a container's JVM heap makes
// of its memory limit: advice, not a failure, so a Normal event; a full
// heap the recommendation outgrows is a Warning, as the JVM may be short
// of heap now.
func (r *Actor) reportHeap(policy *v1alpha1.TailorPolicy, ps *store.PodState, h HeapFit) {
	reason, typ := EventJVMMemoryWasted, corev1.EventTypeNormal
	if h.Fit.Reason == jvm.FitHeapFull {
		reason, typ = EventJVMHeapAtMaximum, corev1.EventTypeWarning
	}
	if !ps.Report("jvmheap:" + h.Container + ":" + string(h.Fit.Reason)) {
		return
	}
	r.Events.Eventf(h.Pod, policy, typ, reason, "Advise", "container %s: %s", h.Container, h.Fit.Message)
}

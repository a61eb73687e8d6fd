package act

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/controller/policy/store"
	"github.com/tailorhq/tailor/internal/jvm"
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
)

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

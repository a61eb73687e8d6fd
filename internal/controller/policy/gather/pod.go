package gather

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/internal/boost"
)

// InFlight reports whether a resize of p, by tailor or anyone, is not
// finished: the kubelet has not seen it, is applying it or deferred it.
func InFlight(p *corev1.Pod) bool {
	switch Observe(p).State {
	case actuator.StateProposed, actuator.StateInProgress, actuator.StateDeferred:
		return true
	}
	return false
}

// Refused is what the kubelet said of p's last resize when it will not
// apply it: Infeasible, or an error applying it; "" otherwise.
func Refused(p *corev1.Pod) string {
	o := Observe(p)
	if o.State != actuator.StateInfeasible && o.State != actuator.StateError {
		return ""
	}
	what := "Infeasible"
	if o.State == actuator.StateError {
		what = "failed"
	}
	if o.Message != "" {
		what += ": " + o.Message
	}
	return what
}

// Observe is actuator.Observe, also for a kubelet that does not report
// status.observedGeneration (1.33, where PodObservedGenerationTracking is
// off): there what it reports of the containers' resources, against the
// spec, says whether it has applied a resize, and the conditions say the
// rest.
func Observe(p *corev1.Pod) actuator.Observation {
	if p.Status.ObservedGeneration != 0 {
		return actuator.Observe(p)
	}
	q := *p
	q.Status.ObservedGeneration = p.Generation
	return actuator.Observe(&q)
}

// LastResize is when tailor last resized p, from the managedFields entries
// its resizes (and its in-place boosts) are recorded under; zero when none
// is there.
func LastResize(p *corev1.Pod) time.Time {
	var last time.Time
	for _, mf := range p.ManagedFields {
		if (mf.Manager == actuator.FieldManager || mf.Manager == boost.FieldManager) && mf.Subresource == "resize" && mf.Time != nil && mf.Time.After(last) {
			last = mf.Time.Time
		}
	}
	return last
}

// DeferredSince is since when the kubelet has deferred a resize tailor sent
// p: the later of its PodResizePending Deferred condition's transition and
// tailor's last resize, when tailor's resize is the newest of p's (the
// managedFields of the resize subresource say whose is); zero otherwise.
func DeferredSince(p *corev1.Pod) time.Time {
	var since time.Time
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodResizePending && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonDeferred {
			since = c.LastTransitionTime.Time
		}
	}
	if since.IsZero() {
		return since
	}
	var newest time.Time
	ours := false
	for _, mf := range p.ManagedFields {
		if mf.Subresource != "resize" || mf.Time == nil || mf.Time.Time.Before(newest) {
			continue
		}
		newest = mf.Time.Time
		ours = mf.Manager == actuator.FieldManager
	}
	if !ours {
		return time.Time{}
	}
	if newest.After(since) {
		return newest
	}
	return since
}

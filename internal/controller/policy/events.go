package policy

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
)

// reportOnce emits an event for a pod's state the first time it is seen,
// and says whether it did, so counters count states, not syncs.
func (r *Reconciler) reportOnce(ps *podState, p *corev1.Pod, policy *v1alpha1.TailorPolicy, key, reason, msg string) bool {
	if ps.standing == nil {
		ps.standing = map[string]bool{}
	}
	ps.standing[key] = true
	if ps.reported[key] {
		return false
	}
	if ps.reported == nil {
		ps.reported = map[string]bool{}
	}
	ps.reported[key] = true
	r.Events.Eventf(p, policy, corev1.EventTypeWarning, reason, "Resize", "%s", msg)
	return true
}

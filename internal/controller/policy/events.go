package policy

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/controller/policy/store"
)

// reportOnce emits an event for a pod's state the first time it is seen,
// and says whether it did, so counters count states, not syncs.
func (r *Reconciler) reportOnce(ps *store.PodState, p *corev1.Pod, policy *v1alpha1.TailorPolicy, key, reason, msg string) bool {
	if !ps.Report(key) {
		return false
	}
	r.Events.Eventf(p, policy, corev1.EventTypeWarning, reason, "Resize", "%s", msg)
	return true
}

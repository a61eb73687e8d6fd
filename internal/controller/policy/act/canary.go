package act

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/canary"
	"github.com/tailorhq/tailor/internal/controller/policy/policymetrics"
)

// reportCanary sends the events of what the policy's canary did this sync
// (autoscale.DecideSync decided it) and counts its rollbacks. Each is about
// the policy, where people look for a workload's story, and names the pod.
func (r *Actor) reportCanary(policy *v1alpha1.TailorPolicy, c canary.Outcome) {
	for _, e := range c.Events {
		typ := corev1.EventTypeNormal
		if e.Reason == canary.EventRolledBack {
			typ = corev1.EventTypeWarning
			policymetrics.CanaryRollbacksTotal.WithLabelValues(policy.Namespace, policy.Name, string(e.Guardrail)).Inc()
		}
		if e.Pod == nil {
			r.Events.Eventf(policy, nil, typ, e.Reason, "Canary", "%s", e.Message)
			continue
		}
		r.Events.Eventf(policy, e.Pod, typ, e.Reason, "Canary", "pod %s: %s", e.Pod.Name, e.Message)
	}
}

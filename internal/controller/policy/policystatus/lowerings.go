package policystatus

import (
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/limits"
	"github.com/tailorhq/tailor/internal/controller/policy/policymetrics"
)

// SetLimits writes the LoweringsHeld condition of a policy with
// change windows or a lowering budget, and the tailor_lowerings_held gauge;
// a policy with neither has no such condition, and no series.
func SetLimits(status *v1alpha1.TailorPolicyStatus, policy *v1alpha1.TailorPolicy, l limits.Outcome) {
	if !l.Active {
		meta.RemoveStatusCondition(&status.Conditions, v1alpha1.ConditionLoweringsHeld)
		policymetrics.LoweringsHeld.DeletePartialMatch(map[string]string{"namespace": policy.Namespace, "policy": policy.Name})
		return
	}
	SetCondition(status, v1alpha1.ConditionLoweringsHeld, l.Status, l.Reason, l.Message, policy.Generation)
	for _, reason := range []fleet.HoldReason{limits.HoldOutsideWindow, limits.HoldBudget, limits.HoldNamespaceBudget} {
		policymetrics.LoweringsHeld.WithLabelValues(policy.Namespace, policy.Name, string(reason)).Set(float64(l.Held[reason]))
	}
}

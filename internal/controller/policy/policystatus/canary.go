package policystatus

import (
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/canary"
)

// SetCanary writes the Canary condition of a policy with a canary,
// and takes it away from one without: a policy that never had one shows
// no such condition.
func SetCanary(status *v1alpha1.TailorPolicyStatus, c canary.Outcome, gen int64) {
	if !c.Active {
		meta.RemoveStatusCondition(&status.Conditions, v1alpha1.ConditionCanary)
		return
	}
	SetCondition(status, v1alpha1.ConditionCanary, c.Status, c.Reason, c.Message, gen)
}

package gather

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/limits"
	"github.com/tailorhq/tailor/internal/controller/policy/store"
)

// namespaceLowerings reads what the namespace budgets of the policy's
// namespace need, from the manager's cache: whether any policy of the
// namespace has one (this policy's lowerings are then counted), and, when
// this policy has one, what every policy of the namespace lowered as its
// checkpoint keeps it, and, for a percent, how many pods run in the
// namespace. What the cache does not show yet of this process's own
// lowerings the ledger adds in the namespace's turn (decideSync).
func (r *Reader) namespaceLowerings(ctx context.Context, policy *v1alpha1.TailorPolicy, lim limits.Config, in *Input) error {
	in.NamespaceBudget = lim.HasNamespaceBudget()
	in.CountLowerings = in.NamespaceBudget
	if !in.CountLowerings {
		var policies v1alpha1.TailorPolicyList
		if err := r.Client.List(ctx, &policies, client.InNamespace(policy.Namespace), client.UnsafeDisableDeepCopy); err != nil {
			return fmt.Errorf("listing the policies of namespace %s: %w", policy.Namespace, err)
		}
		for i := range policies.Items {
			if hasNamespaceBudget(&policies.Items[i]) {
				in.CountLowerings = true
				break
			}
		}
	}
	if !in.NamespaceBudget {
		return nil
	}
	in.Namespace = limits.NamespaceLowerings{Policy: policy.Name, ByPolicy: limits.LoweredBy{}}
	var checkpoints v1alpha1.TailorCheckpointList
	if err := r.Client.List(ctx, &checkpoints, client.InNamespace(policy.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing the checkpoints of namespace %s: %w", policy.Namespace, err)
	}
	for _, cp := range checkpoints.Items {
		// A checkpoint of a policy deleted (and not yet collected) still
		// counts: the pods it lowered were lowered.
		in.Namespace.ByPolicy.Add(cp.Spec.PolicyName, store.LoweredState(cp.Spec.Lowered))
	}
	if lim.NamespacePercent > 0 {
		var pods corev1.PodList
		if err := r.Client.List(ctx, &pods, client.InNamespace(policy.Namespace), client.UnsafeDisableDeepCopy); err != nil {
			return fmt.Errorf("listing the pods of namespace %s: %w", policy.Namespace, err)
		}
		for i := range pods.Items {
			if pods.Items[i].Status.Phase == corev1.PodRunning {
				in.Namespace.Pods++
			}
		}
	}
	return nil
}

// hasNamespaceBudget says whether a policy sets budget.namespacePods.
func hasNamespaceBudget(p *v1alpha1.TailorPolicy) bool {
	b := p.Spec.Behavior
	return b != nil && b.ScaleDown != nil && b.ScaleDown.Budget != nil && b.ScaleDown.Budget.NamespacePods != nil
}

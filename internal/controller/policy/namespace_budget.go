package policy

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/controller/policy/store"
)

// namespaceLowerings reads what the namespace budgets of the policy's
// namespace need, from the manager's cache: whether any policy of the
// namespace has one (this policy's lowerings are then counted), and, when
// this policy has one, what every policy of the namespace lowered as its
// checkpoint keeps it, and, for a percent, how many pods run in the
// namespace. What the cache does not show yet of this process's own
// lowerings the ledger adds in the namespace's turn (decideSync).
func (r *Reconciler) namespaceLowerings(ctx context.Context, policy *v1alpha1.TailorPolicy, in *syncInput) error {
	lim, _, err := autoscale.LoweringLimitsOf(&policy.Spec)
	if err != nil {
		return err
	}
	in.namespaceBudget = lim.HasNamespaceBudget()
	in.countLowerings = in.namespaceBudget
	if !in.countLowerings {
		var policies v1alpha1.TailorPolicyList
		if err := r.Client.List(ctx, &policies, client.InNamespace(policy.Namespace), client.UnsafeDisableDeepCopy); err != nil {
			return fmt.Errorf("listing the policies of namespace %s: %w", policy.Namespace, err)
		}
		for i := range policies.Items {
			if hasNamespaceBudget(&policies.Items[i]) {
				in.countLowerings = true
				break
			}
		}
	}
	if !in.namespaceBudget {
		return nil
	}
	in.namespace = autoscale.NamespaceLowerings{Policy: policy.Name, ByPolicy: autoscale.LoweredBy{}}
	var checkpoints v1alpha1.TailorCheckpointList
	if err := r.Client.List(ctx, &checkpoints, client.InNamespace(policy.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing the checkpoints of namespace %s: %w", policy.Namespace, err)
	}
	for _, cp := range checkpoints.Items {
		// A checkpoint of a policy deleted (and not yet collected) still
		// counts: the pods it lowered were lowered.
		in.namespace.ByPolicy.Add(cp.Spec.PolicyName, store.LoweredState(cp.Spec.Lowered))
	}
	if lim.NamespacePercent > 0 {
		var pods corev1.PodList
		if err := r.Client.List(ctx, &pods, client.InNamespace(policy.Namespace), client.UnsafeDisableDeepCopy); err != nil {
			return fmt.Errorf("listing the pods of namespace %s: %w", policy.Namespace, err)
		}
		for i := range pods.Items {
			if pods.Items[i].Status.Phase == corev1.PodRunning {
				in.namespace.Pods++
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

// decideSync decides the sync (autoscale.DecideSync), again with every
// node when the decision asks for them. A policy with a namespace budget
// decides in its namespace's turn, on the checkpoints joined with the
// ledger; a policy whose lowerings a namespace budget counts records its
// count in the ledger before anything is sent (store.Ledger).
func (r *Reconciler) decideSync(ctx context.Context, policy *v1alpha1.TailorPolicy, in *syncInput, input autoscale.SyncInput) (autoscale.SyncDecision, error) {
	ns, now := policy.Namespace, input.Now
	if in.namespaceBudget {
		release := r.ledger.Take(ns)
		defer release()
		for p, lowered := range r.ledger.Sent(ns, now) {
			input.Namespace.ByPolicy.Add(p, lowered)
		}
	}
	decision, err := autoscale.DecideSync(input)
	if err == nil && decision.NeedNodes {
		// A pod may be recreated elsewhere: whether some node could hold
		// it needs every node, read only now.
		if input.Recreation.Nodes, err = r.nodesWithPods(ctx); err == nil {
			decision, err = autoscale.DecideSync(input)
		}
	}
	if err == nil && input.CountLowerings {
		r.ledger.Record(ns, policy.Name, decision.Limits.Lowered, now)
	}
	return decision, err
}

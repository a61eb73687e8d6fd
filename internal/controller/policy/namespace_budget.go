package policy

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/limits"
	"github.com/tailorhq/tailor/internal/autoscale/placement"
)

// loweringLedger is what this process decided to lower in each namespace
// whose lowerings a namespace budget (budget.namespacePods) counts, by
// policy, within the budget's period.
//
// A namespace budget is judged on every policy's lowerings, which each
// policy's TailorCheckpoint keeps, read from the manager's cache. That
// alone is not safe: policies are synced several at once
// (ConcurrentSyncs), and the cache shows a checkpoint some time after it
// is written, so two policies of one namespace could each see room for
// the last pod and together lower two. Hence two things, both in this
// process, which is the only one acting on the namespace (one leader, and
// a shard owns whole namespaces):
//   - what a sync decides to lower is recorded here before its resizes
//     are sent (as its checkpoint is written before them), and the
//     namespace's count is the checkpoints the cache has joined with what
//     is recorded here, so it never misses a lowering of this process
//     however far the cache lags;
//   - a policy with a namespace budget reads the count, decides and
//     records in its namespace's turn, one policy at a time, so no two
//     spend the same room. Only the pure decision runs in the turn (the
//     reads are done before, but for the nodes a recreation rarely asks
//     for; the writes and resizes after), so policies of one namespace
//     wait for each other for milliseconds, and those of other namespaces
//     not at all. The resizes may be sent after the turn: they are
//     counted already.
//
// A policy without a namespace budget records its lowerings too (outside
// the turn: nothing holds them), so the budgets of its namespace count
// them. After a restart or a leader change the ledger starts empty and the
// checkpoints, all on the apiserver before their resizes were sent, are
// the count.
type loweringLedger struct {
	mu         sync.Mutex
	namespaces map[string]*namespaceLedger
}

// namespaceLedger is one namespace's part of the ledger. It is never
// dropped once made: a namespace's turn must stay one mutex for as long
// as the process runs.
type namespaceLedger struct {
	turn sync.Mutex
	// sent is guarded by loweringLedger.mu.
	sent limits.LoweredBy
}

func (l *loweringLedger) namespace(ns string) *namespaceLedger {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.namespaces == nil {
		l.namespaces = map[string]*namespaceLedger{}
	}
	n := l.namespaces[ns]
	if n == nil {
		n = &namespaceLedger{sent: limits.LoweredBy{}}
		l.namespaces[ns] = n
	}
	return n
}

// take waits for the namespace's turn; release ends it.
func (l *loweringLedger) take(ns string) (release func()) {
	n := l.namespace(ns)
	n.turn.Lock()
	return n.turn.Unlock
}

// sent is a copy of what the namespace's policies were recorded to have
// lowered within the budget's period, by policy.
func (l *loweringLedger) sent(ns string, now time.Time) limits.LoweredBy {
	n := l.namespace(ns)
	l.mu.Lock()
	defer l.mu.Unlock()
	out := limits.LoweredBy{}
	for policy, lowered := range n.sent {
		out.Add(policy, lowered.Within(now))
	}
	return out
}

// record adds a policy's count after its sync (this sync's lowerings in
// it) to the namespace's, and lets go of what the period no longer counts.
func (l *loweringLedger) record(ns, policy string, lowered limits.Lowered, now time.Time) {
	n := l.namespace(ns)
	l.mu.Lock()
	defer l.mu.Unlock()
	n.sent.Add(policy, lowered)
	for p, was := range n.sent {
		if within := was.Within(now); len(within) > 0 {
			n.sent[p] = within
		} else {
			delete(n.sent, p)
		}
	}
}

// namespaceLowerings reads what the namespace budgets of the policy's
// namespace need, from the manager's cache: whether any policy of the
// namespace has one (this policy's lowerings are then counted), and, when
// this policy has one, what every policy of the namespace lowered as its
// checkpoint keeps it, and, for a percent, how many pods run in the
// namespace. What the cache does not show yet of this process's own
// lowerings the ledger adds in the namespace's turn (decideSync).
func (r *Reconciler) namespaceLowerings(ctx context.Context, policy *v1alpha1.TailorPolicy, in *syncInput) error {
	lim, _, err := limits.ConfigOf(&policy.Spec)
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
	in.namespace = limits.NamespaceLowerings{Policy: policy.Name, ByPolicy: limits.LoweredBy{}}
	var checkpoints v1alpha1.TailorCheckpointList
	if err := r.Client.List(ctx, &checkpoints, client.InNamespace(policy.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing the checkpoints of namespace %s: %w", policy.Namespace, err)
	}
	for _, cp := range checkpoints.Items {
		// A checkpoint of a policy deleted (and not yet collected) still
		// counts: the pods it lowered were lowered.
		in.namespace.ByPolicy.Add(cp.Spec.PolicyName, loweredState(cp.Spec.Lowered))
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
// count in the ledger before anything is sent (loweringLedger).
func (r *Reconciler) decideSync(ctx context.Context, policy *v1alpha1.TailorPolicy, in *syncInput, input autoscale.SyncInput) (autoscale.SyncDecision, error) {
	ns, now := policy.Namespace, input.Now
	if in.namespaceBudget {
		release := r.ledger.take(ns)
		defer release()
		for p, lowered := range r.ledger.sent(ns, now) {
			input.Namespace.ByPolicy.Add(p, lowered)
		}
	}
	decision, wanted, err := autoscale.DecideSync(input)
	if err == nil && wanted != nil {
		// A pod may be recreated elsewhere: whether some node could hold
		// it needs every node, read only now.
		var nodes []placement.NodePods
		if nodes, err = r.nodesWithPods(ctx); err == nil {
			decision, err = wanted.Decide(nodes)
		}
	}
	if err != nil {
		return autoscale.SyncDecision{}, err
	}
	if input.CountLowerings {
		r.ledger.record(ns, policy.Name, decision.Limits.Lowered, now)
	}
	return *decision, nil
}

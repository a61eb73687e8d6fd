package gather

import (
	"context"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/canary"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/limits"
	"github.com/tailorhq/tailor/internal/autoscale/placement"
	"github.com/tailorhq/tailor/internal/controller/policy/policymetrics"
	"github.com/tailorhq/tailor/internal/controller/policy/store"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/ownership"
	"github.com/tailorhq/tailor/internal/podchange"
)

// Reader reads what a sync of a policy works from. It changes nothing: not
// the cluster, not what the controller learnt.
type Reader struct {
	Client client.Client
	// VerticalPodAutoscalers reads VerticalPodAutoscalers (as
	// unstructured: their CRD may not be installed); nil looks for none.
	VerticalPodAutoscalers client.Reader
	// Guardrails asks the canaries' query guardrails; nil: there is no
	// Prometheus for them, and a policy with any is invalid.
	Guardrails GuardrailQuerier
}

// InvalidPolicyError is a policy that cannot be synced as it stands, for a
// reason (a v1alpha1 Reason*) its Ready condition says: the user's to fix,
// not retried before the next sync.
type InvalidPolicyError struct {
	Reason string
	Err    error
}

func (e *InvalidPolicyError) Error() string { return e.Err.Error() }

// Selection is what the policy's selector matches and who else has a say
// over it, for the decision of which pods are the policy's
// (ownership.ClaimedBy).
type Selection struct {
	// Running are the running pods the selector matches, Unbound those
	// waiting for a node, each sorted by name.
	Running, Unbound []*corev1.Pod
	// Self is the policy as a claimant; Claims is false for one that
	// claims nothing (being deleted), which sizes what it selects, and
	// then nothing else is read.
	Self   ownership.Claimant
	Claims bool
	// Chains are the controller chains of Running and Unbound, by pod UID.
	Chains map[types.UID]ownership.Chain
	// Others are the policies of the namespace, and VPAs its
	// VerticalPodAutoscalers.
	Others []ownership.Claimant
	VPAs   []ownership.VPA
}

// Select reads the pods state's selector matches, their controller
// chains, the namespace's policies and VerticalPodAutoscalers.
func (r *Reader) Select(ctx context.Context, policy *v1alpha1.TailorPolicy, spec Spec, state *store.PolicyState) (Selection, error) {
	var sel Selection
	var err error
	if sel.Running, sel.Unbound, err = r.pods(ctx, state); err != nil {
		return Selection{}, err
	}
	if sel.Self, sel.Claims = claimant(policy, spec.Selector); !sel.Claims {
		// Validated before: a selector that parses, or a targetRef.
		return sel, nil
	}
	if sel.Chains, err = r.chains(ctx, append(append([]*corev1.Pod{}, sel.Running...), sel.Unbound...)); err != nil {
		return Selection{}, err
	}
	if sel.Others, err = r.claimants(ctx, policy.Namespace); err != nil {
		return Selection{}, err
	}
	if sel.VPAs, err = r.vpas(ctx, policy.Namespace); err != nil {
		return Selection{}, err
	}
	return sel, nil
}

// Input is what a sync reads of the pods the policy sizes and of what
// holds them: facts, for advise and the decision to judge.
type Input struct {
	// Usage is one read for all the pods, screened (metrics.Screen);
	// UsageErr is why the read returned nothing at all, nil when it
	// answered.
	Usage    metrics.Result
	UsageErr error
	// Guardrails are the canary's query guardrails' answers, by name; nil
	// when no canary pod is watched.
	Guardrails map[string]canary.GuardrailAnswer
	// HPAs are the HorizontalPodAutoscalers of the namespace.
	HPAs []autoscalingv2.HorizontalPodAutoscaler
	// Classes are the classes of the nodes the pods run on, by node name,
	// with spec.nodeClasses (nil without).
	Classes map[string]string
	// Rules are the namespace's LimitRanges and ResourceQuotas.
	Rules *nsrules.Rules
	// Largest is the largest node's allocatable.
	Largest map[corev1.ResourceName]podchange.DefaultBound
	// RoomNodes are the nodes a new pod of the target could land on, with
	// their pods for a DaemonSet or while a pod waits for a node; nil when
	// new pods are not sized.
	RoomNodes []placement.NodePods
	// NamespaceBudget: the policy has a namespace budget, judged by
	// Namespace (as the cache shows it; the ledger adds to it).
	// CountLowerings: some policy of the namespace has one, which counts
	// this policy's lowerings.
	NamespaceBudget, CountLowerings bool
	Namespace                       limits.NamespaceLowerings
}

// Read reads, for the pods the policy sizes (pods, and unbound waiting for
// a node), one usage read through src, their nodes' capacity, the canary's
// guardrails, the HorizontalPodAutoscalers and namespace rules that hold
// requests, the nodes a new pod could land on, and what the lowering
// budgets of the namespace count (namespaceLowerings). The nodes the pods
// run on are read (Nodes) once the advice says which pods may be resized.
func (r *Reader) Read(ctx context.Context, policy *v1alpha1.TailorPolicy, spec Spec, state *store.PolicyState, src metrics.Source,
	pods, unbound []*corev1.Pod, now time.Time) (*Input, error) {
	in := &Input{}
	usage, err := src.Usage(ctx, pods)
	if err != nil {
		// No usage: nothing is lowered, since that needs fresh data, but
		// what pod status says (an OOM kill) is still answered.
		in.UsageErr = err
		usage = metrics.Result{}
		log.FromContext(ctx).Info("metrics source unavailable: holding all but raises from pod status", "source", src.Name(), "err", err.Error())
	}
	if in.Guardrails, err = r.guardrailAnswers(ctx, policy, spec, state.Canary, pods, now); err != nil {
		return nil, err
	}
	capacity, classes, err := r.podNodes(ctx, pods, policy.Spec.NodeClasses)
	if err != nil {
		return nil, err
	}
	in.Classes = classes
	var rejected []metrics.Problem
	in.Usage, rejected = metrics.Screen(usage, pods, capacity, func(p *corev1.Pod) time.Time {
		last := LastResize(p)
		if ps, ok := state.Pods[p.UID]; ok && ps.LastResize.After(last) {
			last = ps.LastResize
		}
		return last
	})
	for _, p := range rejected {
		policymetrics.UsageRejected.WithLabelValues(src.Name(), string(p.Reason)).Inc()
	}
	if in.HPAs, err = r.hpas(ctx, policy.Namespace); err != nil {
		return nil, err
	}
	if in.Rules, err = r.namespaceRules(ctx, policy.Namespace); err != nil {
		return nil, err
	}
	if in.Largest, err = r.largestNode(ctx); err != nil {
		return nil, err
	}
	if in.RoomNodes, err = r.roomNodes(ctx, policy, state, unbound); err != nil {
		return nil, err
	}
	if err := r.namespaceLowerings(ctx, policy, spec.Limits, in); err != nil {
		return nil, err
	}
	return in, nil
}

package policy

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/advise"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/canary"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/limits"
	"github.com/tailorhq/tailor/internal/autoscale/room"
	"github.com/tailorhq/tailor/internal/controller/policy/act"
	"github.com/tailorhq/tailor/internal/controller/policy/gather"
	"github.com/tailorhq/tailor/internal/controller/policy/policystatus"
	"github.com/tailorhq/tailor/internal/controller/policy/store"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/podchange"
)

// syncInput is everything one sync of a policy works from: what gather
// read, what was judged of it (judge), what advise made of it, and what
// act did, for status.
type syncInput struct {
	// spec is the policy's spec, parsed once for the sync.
	spec  gather.Spec
	state *store.PolicyState
	pods  []*corev1.Pod
	// own says which of the selected pods are the policy's, and which other
	// policies or VerticalPodAutoscaler size the rest.
	own   owned
	usage metrics.Result
	// usageErr is why the usage read returned nothing at all, nil when it
	// answered.
	usageErr error
	// read is what gather read, for the judgements made of it (judge).
	read *gather.Input
	// views are the pods as the learnt model sees them, with their
	// nodes' classes (advise).
	views []advise.Pod
	// preemptionRefused says why no raise is sent for the scheduler to
	// preempt for though the policy asks for it; "" otherwise.
	preemptionRefused string
	// advice is what the recommender said per pod and container, for
	// status and the reaction metric.
	advice map[types.UID]advise.Advice
	// decision is the input of the pure decision.
	decision fleet.PolicyInput
	// blocked is what held resizes back, by reason, for status (act's
	// Result).
	blocked map[string]string
	// hpa describes the HorizontalPodAutoscalers of the target, for the
	// RequestsHeldForHPA condition; empty when there are none.
	hpa string
	// notBoosted says which containers the startup boost leaves alone, and
	// why, for the Ready condition.
	notBoosted map[string]bool
	// recommendation is the workload's, as the model advises it this sync
	// (nil: none yet): status says it, new pods are planned from it.
	recommendation *v1alpha1.Recommendation
	// unbound are the policy's pods not yet bound to a node.
	unbound []*corev1.Pod
	// largest is the largest node's allocatable, and defaults the
	// maxAllowed a container whose policy sets none gets this sync
	// (podchange.DefaultMaxAllowed).
	largest, defaults map[corev1.ResourceName]podchange.DefaultBound
	// newPodRoom is the most a new pod of the target may request and still
	// find a node (placement.NewPodRoom); nil when unknown or not needed.
	newPodRoom corev1.ResourceList
	// boostRaise names, by pod, the containers whose cpu target is a boost
	// given: a resize raising one is sent under boost.FieldManager.
	boostRaise map[types.UID]map[string]bool
	// conflict says which other policies size some of the pods the
	// policy's selector matches, and vpa which VerticalPodAutoscaler holds
	// the policy's workload, for the Ready condition; empty when none.
	conflict, vpa string
	// wasDown and wasRejecting are what the previous sync knew of the
	// metrics source, for the events act sends when that changes.
	wasDown, wasRejecting bool
	// guardrails are the canary's query guardrails' answers, by name; nil
	// when no canary pod is watched.
	guardrails map[string]canary.GuardrailAnswer
	// namespaceBudget: the policy has a namespace budget, judged by
	// namespace (as the cache shows it; the ledger adds to it).
	// countLowerings: some policy of the namespace has one, which counts
	// this policy's lowerings.
	namespaceBudget, countLowerings bool
	namespace                       limits.NamespaceLowerings
	// roomAsked are the standing asks for room for the policy's pods, by
	// UID (store.RoomBoard).
	roomAsked map[types.UID]room.Asked
	// jvms: some pod runs a JVM; heapFits are the JVMs that cannot use
	// their memory limit (heapFits), for status and events.
	jvms     bool
	heapFits []act.HeapFit
}

// gather reads what the policy's sync needs through the gather package
// and changes nothing: the pods its selector matches and who else has a
// say over them, then, for those that are the policy's (owners judges
// which: usage is read for them alone), one usage read, their nodes'
// capacity, the HorizontalPodAutoscalers and namespace rules that hold
// requests, the nodes a new pod could land on, and what the lowering
// budgets of its namespace count. What these facts hold back is judged
// next (judge); the nodes the pods run on are read once the advice says
// which pods may be resized (candidateNodes).
func (r *Reconciler) gather(ctx context.Context, policy *v1alpha1.TailorPolicy, spec gather.Spec, state *store.PolicyState, now time.Time) (*syncInput, error) {
	reader := r.reader()
	sel, err := reader.Select(ctx, policy, spec, state)
	if err != nil {
		return nil, err
	}
	own := owners(sel, sel.Running)
	// A pod waiting for a node is the policy's by the same owner chain: a
	// canary's unschedulable pod is not its stable's to replace.
	unbound := owners(sel, sel.Unbound).pods
	read, err := reader.Read(ctx, policy, spec, state, r.usageSource(state), own.pods, unbound, now)
	if err != nil {
		return nil, err
	}
	return &syncInput{spec: spec, state: state, pods: own.pods, unbound: unbound, own: own, conflict: own.conflict(), vpa: own.vpaHeld(),
		usage: read.Usage, usageErr: read.UsageErr, guardrails: read.Guardrails, read: read, largest: read.Largest,
		namespaceBudget: read.NamespaceBudget, countLowerings: read.CountLowerings, namespace: read.Namespace,
		advice: map[types.UID]advise.Advice{}, notBoosted: map[string]bool{}, boostRaise: map[types.UID]map[string]bool{}}, nil
}

// reader reads what a sync works from.
func (r *Reconciler) reader() *gather.Reader {
	return &gather.Reader{Client: r.Client, VerticalPodAutoscalers: r.VerticalPodAutoscalers, Guardrails: r.Guardrails}
}

// actInput is what act reports on besides the decision.
func actInput(in *syncInput) *act.Input {
	return &act.Input{State: in.state, Pods: in.pods, WasDown: in.wasDown, WasRejecting: in.wasRejecting,
		Owners: act.Owners{Others: in.own.others(), VPAHeld: in.vpa, Conflict: in.conflict}, PreemptionRefused: in.preemptionRefused}
}

// statusInput is what status says of the sync.
func statusInput(in *syncInput, source string, admission *v1alpha1.Admission) policystatus.Input {
	fits := make([]policystatus.HeapFit, 0, len(in.heapFits))
	for _, f := range in.heapFits {
		fits = append(fits, policystatus.HeapFit{Pod: f.Pod.Name, Container: f.Container, Fit: f.Fit})
	}
	return policystatus.Input{State: in.state, Pods: in.pods, Source: source, Recommendation: in.recommendation, Defaults: in.defaults,
		Admission: admission, HPA: in.hpa, Holds: in.decision.Holds, Blocked: in.blocked, NotBoosted: in.notBoosted, VPAHeld: in.vpa, Conflict: in.conflict,
		JVMs: in.jvms, HeapFits: fits}
}

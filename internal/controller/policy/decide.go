package policy

import (
	"context"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/placement"
	"github.com/tailorhq/tailor/internal/controller/policy/act"
	"github.com/tailorhq/tailor/internal/controller/policy/store"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/ownership"
	"github.com/tailorhq/tailor/internal/podchange"
)

// Defaults of InPlaceOrRecreate.
const (
	// DefaultRecreateAfter is how long a raise must find no room in place
	// before the pod is evicted, as VerticalPodAutoscaler waits on a
	// Deferred in-place resize.
	DefaultRecreateAfter = 5 * time.Minute
	// AdmissionSettle is how long an entry stays in status.recreations
	// before its pod is evicted. The admission policy reads TailorPolicies
	// from the apiserver's own informer, which trails a status write; the
	// owner's controller can create the replacement within milliseconds of
	// an eviction, before that informer has the entry, and the pod would
	// then be admitted at its template's size.
	AdmissionSettle = time.Second
)

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
	decision, wanted, err := autoscale.DecideSync(input)
	if err == nil && wanted != nil {
		// A pod may be recreated elsewhere: whether some node could hold
		// it needs every node, read only now.
		var nodes []placement.NodePods
		if nodes, err = r.reader().NodesWithPods(ctx); err == nil {
			decision, err = wanted.Decide(nodes)
		}
	}
	if err != nil {
		return autoscale.SyncDecision{}, err
	}
	if input.CountLowerings {
		r.ledger.Record(ns, policy.Name, decision.Limits.Lowered, now)
	}
	return *decision, nil
}

// candidateNodes reads the nodes of the pods the advice would change (or
// room asked of them would), with the pods bound to them: only such a pod
// can be resized, so the nodes of the others are not read.
func (r *Reconciler) candidateNodes(ctx context.Context, policy *v1alpha1.TailorPolicy, in *syncInput) error {
	if policy.Spec.Mode() == v1alpha1.UpdateModeOff {
		return nil
	}
	var candidates []*corev1.Pod
	for _, pin := range in.decision.Pods {
		_, asked := in.roomAsked[pin.Pod.UID]
		if len(pin.Targets) > 0 || pin.PodTarget.CPU != nil || pin.PodTarget.Memory != nil || (asked && len(pin.Early) > 0) {
			candidates = append(candidates, pin.Pod)
		}
	}
	var err error
	in.decision.Nodes, err = r.reader().Nodes(ctx, candidates)
	return err
}

// recreationState is what the decision reads to recreate a pod short of
// room: each pod's run of shortfall and last refused eviction, the
// policy's last eviction and status.recreations, and the template and
// generation an entry is planned for.
func (r *Reconciler) recreationState(policy *v1alpha1.TailorPolicy, in *syncInput) autoscale.RecreationState {
	state := in.state
	after := DefaultRecreateAfter
	if u := policy.Spec.UpdatePolicy; u != nil && u.RecreateAfter != nil {
		after = u.RecreateAfter.Duration
	}
	out := autoscale.RecreationState{
		RecreateAfter: after, LastEviction: state.LastEviction, Entries: state.Recreations,
		Template: admittedTemplate(state.Template, in.decision.Rules), Generation: policy.Generation,
		ShortSince: map[types.UID]time.Time{}, Blocked: map[types.UID]autoscale.EvictionBlock{},
	}
	for _, p := range in.pods {
		ps := state.Pod(p)
		out.ShortSince[p.UID] = ps.ShortSince
		if b := ps.EvictionBlocked; b.Reason != "" {
			out.Blocked[p.UID] = autoscale.EvictionBlock{Until: b.Until, Reason: b.Reason, Message: b.Message}
		}
	}
	return out
}

// admittedTemplate is the template as the LimitRanger admits its pods (its
// defaults applied): what the admission policies see and compare an entry's
// template values with.
func admittedTemplate(t *corev1.PodTemplateSpec, rules *nsrules.Rules) *corev1.PodTemplateSpec {
	if t == nil || rules == nil {
		return t
	}
	p := rules.Admitted(&corev1.Pod{ObjectMeta: t.ObjectMeta, Spec: t.Spec})
	return &corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}
}

// judge makes of what gather read the judgements advise and the decision
// start from: the decision's input, the requests the
// HorizontalPodAutoscalers hold, the maxAllowed a container whose policy
// sets none gets, and the room a new pod would find.
func (r *Reconciler) judge(policy *v1alpha1.TailorPolicy, in *syncInput, now time.Time) {
	in.decision = fleet.PolicyInput{
		Spec: &policy.Spec, Server: r.Actuator.Server.Version, MemoryFloorHeadroom: MemoryFloorHeadroom, Now: now,
	}
	in.decision.Rules = in.read.Rules
	in.decision.Holds, in.hpa = hpaHolds(policy, in.own.chains, in.read.HPAs)
	in.defaults = podchange.DefaultMaxAllowed(in.decision.Rules, in.largest)
	in.newPodRoom = newPodRoom(policy, in.state, in.unbound, in.read.RoomNodes, now)
}

// hpaHolds says which requests the HorizontalPodAutoscalers scaling the
// policy's target, or a workload its pods' chains reach (a selector
// policy's pods' Deployment), hold.
func hpaHolds(policy *v1alpha1.TailorPolicy, chains []ownership.Chain, hpas []autoscalingv2.HorizontalPodAutoscaler) (ownership.Holds, string) {
	var target []ownership.Workload
	if ref := policy.Spec.TargetRef; ref != nil {
		target = append(target, ownership.WorkloadOf(ref.APIVersion, ref.Kind, ref.Name))
	}
	workloads := ownership.Workloads(chains, target...)
	if len(workloads) == 0 {
		return ownership.Holds{}, ""
	}
	return ownership.HPAHolds(workloads, hpas)
}

// newPodRoom is the most a new pod of the policy's target may request and
// still find a node, when new pods are sized at admission: over the nodes'
// allocatable, or their free room for a DaemonSet (whose new pod must fit
// the node it replaces one on) and while a pod tailor sized waits
// unschedulable; nil when new pods are not sized.
func newPodRoom(policy *v1alpha1.TailorPolicy, state *store.PolicyState, unbound []*corev1.Pod, nodes []placement.NodePods, now time.Time) corev1.ResourceList {
	if nodes == nil {
		return nil
	}
	ref := policy.Spec.TargetRef
	in := placement.NewPodRoomInput{Template: state.Template, DaemonSet: ref.Kind == "DaemonSet", Nodes: nodes}
	stuck, _ := placement.DecideStuck(placement.StuckInput{Pods: unbound, Template: state.Template, Now: now.Add(placement.UnschedulableAfter)})
	in.Free = len(stuck) > 0
	if in.DaemonSet {
		in.Own = func(p *corev1.Pod) bool {
			owner := metav1.GetControllerOf(p)
			return p.Namespace == policy.Namespace && owner != nil && owner.Kind == "DaemonSet" && owner.Name == ref.Name
		}
	}
	return placement.NewPodRoom(in)
}

// toAct is what act carries out of the sync's decision: whether the policy
// sizes its pods (not in mode Off), when the decision wants it synced
// again, the containers it leaves at risk of an OOM kill, and the JVMs
// that cannot use their memory limit.
func (r *Reconciler) toAct(policy *v1alpha1.TailorPolicy, in *syncInput, d autoscale.SyncDecision) act.Decision {
	out := act.Decision{SyncDecision: d, Resize: policy.Spec.Mode() != v1alpha1.UpdateModeOff, Requeue: r.SyncPeriod}
	sooner := func(after time.Duration) {
		if after > 0 && after < out.Requeue {
			out.Requeue = after
		}
	}
	sooner(d.RetryAfter)
	if d.StuckSeen != nil {
		sooner(d.StuckRetry)
	}
	// A held pod is due again when a resize in flight finishes, which its
	// pod's update event announces; the sync period is the backstop.
	if out.Resize {
		out.MemoryAtRisk = memoryAtRisk(policy, in, d.PolicyDecision)
		out.HeapFits = in.heapFits
	}
	return out
}

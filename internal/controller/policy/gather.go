package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/internal/advise"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/boost"
	"github.com/tailorhq/tailor/internal/controller/policy/policymetrics"
	"github.com/tailorhq/tailor/internal/controller/policy/store"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/ownership"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/resize"
)

// syncInput is everything one sync of a policy works from: what gather
// read, then what advise made of it.
type syncInput struct {
	state *store.PolicyState
	pods  []*corev1.Pod
	// own says which of the selected pods are the policy's, and which other
	// policies or VerticalPodAutoscaler size the rest.
	own   owned
	usage metrics.Result
	// usageErr is why the usage read returned nothing at all, nil when it
	// answered.
	usageErr error
	// advice is what the recommender said per pod and container, for
	// status and the reaction metric.
	advice map[types.UID]advise.Advice
	// decision is the input of the pure decision.
	decision autoscale.PolicyInput
	// blocked is what held resizes back, by reason, for status.
	blocked map[string]string
	// recorded are the owners whose status.recreations entry this sync
	// made: it is written with the sync's status, and taken back if that
	// write fails.
	recorded []types.UID
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
	// find a node (autoscale.NewPodRoom); nil when unknown or not needed.
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
	guardrails map[string]autoscale.GuardrailAnswer
	// namespaceBudget: the policy has a namespace budget, judged by
	// namespace (as the cache shows it; the ledger adds to it).
	// countLowerings: some policy of the namespace has one, which counts
	// this policy's lowerings.
	namespaceBudget, countLowerings bool
	namespace                       autoscale.NamespaceLowerings
}

// gather reads what the policy's sync needs and changes nothing it learnt:
// its configuration and its state (restored from the checkpoint on first
// sight), its pods by owner (those waiting for a node too), one usage read
// for all of them, their nodes' capacity, the HorizontalPodAutoscalers and
// namespace rules that hold requests, the room a new pod would find, and
// what the lowering budgets of its namespace count (namespaceLowerings).
// The nodes the pods run on are read once the advice says which pods may be
// resized (candidateNodes).
func (r *Reconciler) gather(ctx context.Context, policy *v1alpha1.TailorPolicy, now time.Time) (*syncInput, error) {
	state, err := r.prepare(ctx, policy, now)
	if err != nil {
		return nil, err
	}
	selected, unbound, err := r.pods(ctx, state)
	if err != nil {
		return nil, err
	}
	own, err := r.owners(ctx, policy, selected)
	if err != nil {
		return nil, err
	}
	pods := own.pods
	// A pod waiting for a node is the policy's by the same owner chain: a
	// canary's unschedulable pod is not its stable's to replace.
	if len(unbound) > 0 {
		waiting, err := r.owners(ctx, policy, unbound)
		if err != nil {
			return nil, err
		}
		unbound = waiting.pods
	}
	in := &syncInput{state: state, pods: pods, unbound: unbound, own: own, conflict: own.conflict(), vpa: own.vpaHeld(),
		advice: map[types.UID]advise.Advice{}, notBoosted: map[string]bool{}, boostRaise: map[types.UID]map[string]bool{}}
	usage, err := r.usageSource(state).Usage(ctx, pods)
	if err != nil {
		// No usage: nothing is lowered, since that needs fresh data, but
		// what pod status says (an OOM kill) is still answered.
		in.usageErr = err
		usage = metrics.Result{}
		log.FromContext(ctx).Info("metrics source unavailable: holding all but raises from pod status", "source", r.Source.Name(), "err", err.Error())
	}
	if in.guardrails, err = r.guardrailAnswers(ctx, policy, state.Canary, pods, now); err != nil {
		return nil, err
	}
	capacity, err := r.nodeCapacities(ctx, pods)
	if err != nil {
		return nil, err
	}
	var rejected []metrics.Problem
	in.usage, rejected = metrics.Screen(usage, pods, capacity, func(p *corev1.Pod) time.Time {
		last := lastResizeOf(p)
		if ps, ok := state.Pods[p.UID]; ok && ps.LastResize.After(last) {
			last = ps.LastResize
		}
		return last
	})
	for _, p := range rejected {
		policymetrics.UsageRejected.WithLabelValues(r.usageSource(state).Name(), string(p.Reason)).Inc()
	}
	in.decision = autoscale.PolicyInput{
		Spec: &policy.Spec, Server: r.Actuator.Server.Version, MemoryFloorHeadroom: MemoryFloorHeadroom, Now: now,
	}
	if in.decision.Holds, in.hpa, err = r.hpaHolds(ctx, policy, own.chains); err != nil {
		return nil, err
	}
	if in.decision.Rules, err = r.namespaceRules(ctx, policy.Namespace); err != nil {
		return nil, err
	}
	if in.largest, err = r.largestNode(ctx); err != nil {
		return nil, err
	}
	in.defaults = podchange.DefaultMaxAllowed(in.decision.Rules, in.largest)
	if in.newPodRoom, err = r.newPodRoom(ctx, policy, state, unbound, now); err != nil {
		return nil, err
	}
	if err := r.namespaceLowerings(ctx, policy, in); err != nil {
		return nil, err
	}
	return in, nil
}

// advise learns from what gather read (usage, terminations, the metrics
// source's answer) and asks the learnt state about each pod: its targets,
// with the startup boost's, become the decision's pods.
func (r *Reconciler) advise(policy *v1alpha1.TailorPolicy, in *syncInput, now time.Time) error {
	state := in.state
	if err := state.Model.Configure(&policy.Spec, in.pods); err != nil {
		var invalid *advise.ConfigError
		if errors.As(err, &invalid) {
			return &invalidPolicyError{reason: v1alpha1.ReasonInvalidPolicy, err: invalid.Err}
		}
		return err
	}
	in.wasDown, in.wasRejecting = state.MetricsErr != nil, state.Rejecting
	state.MetricsErr, state.Problems = in.usageErr, in.usage.Problems
	views := make([]advise.Pod, 0, len(in.pods))
	for _, p := range in.pods {
		ps := state.Pod(p)
		views = append(views, advise.Pod{Pod: p, Memory: &ps.Memory, LastResize: ps.LastResize})
	}
	state.Model.Learn(&policy.Spec, views, in.usage, now)
	for _, p := range in.pods {
		ps := state.Pod(p)
		if last := lastResizeOf(p); last.After(ps.LastResize) {
			// A resize this process did not send, or sent before it
			// restarted: the pod's own record says when.
			ps.LastResize = last
		}
		a := state.Model.Advise(advise.Input{
			Spec: &policy.Spec, Pod: advise.Pod{Pod: p, Memory: &ps.Memory, LastResize: ps.LastResize}, Usage: in.usage,
			Holds: in.decision.Holds, Template: state.Template, FieldManager: actuator.FieldManager, Now: now,
		})
		// The reaction-latency clock runs from the oldest evidence for a
		// raise not yet sent.
		switch {
		case a.RaiseSince.IsZero():
			ps.RaiseSince = time.Time{}
		case ps.RaiseSince.IsZero() || a.RaiseSince.Before(ps.RaiseSince):
			ps.RaiseSince = a.RaiseSince
		}
		if len(a.BoostRaise) > 0 {
			in.boostRaise[p.UID] = a.BoostRaise
		}
		for _, n := range a.NotBoosted {
			in.notBoosted[n] = true
		}
		in.advice[p.UID] = a
		in.decision.Pods = append(in.decision.Pods, autoscale.PodInput{
			Pod: p, Targets: a.Targets, PodTarget: a.PodTarget, WorkingSet: a.WorkingSet,
			LastResize: ps.LastResize, InFlight: inFlight(p), ResizeRefused: refused(p), RaiseSince: ps.RaiseSince, Boost: a.Boost,
			Throttled: throttledSince(p, in.usage, ps.LastResize),
		})
	}
	return nil
}

// throttledSince is each container's throttled share of CFS periods, for
// the figures measured wholly after since (the pod's last resize): one
// reaching back before it was measured under other limits.
func throttledSince(p *corev1.Pod, usage metrics.Result, since time.Time) map[string]float64 {
	var out map[string]float64
	for _, c := range podcontainers.Names(p) {
		u, ok := usage.Usage[metrics.Key{Namespace: p.Namespace, Pod: p.Name, Container: c}]
		if !ok || u.Throttled == nil || !u.ThrottledSince.After(since) {
			continue
		}
		if out == nil {
			out = map[string]float64{}
		}
		out[c] = *u.Throttled
	}
	return out
}

// candidateNodes reads the nodes of the pods the advice would change, with
// the pods bound to them: only such a pod can be resized, so the nodes of
// the others are not read.
func (r *Reconciler) candidateNodes(ctx context.Context, policy *v1alpha1.TailorPolicy, in *syncInput) error {
	if policy.Spec.Mode() == v1alpha1.UpdateModeOff {
		return nil
	}
	var candidates []*corev1.Pod
	for _, pin := range in.decision.Pods {
		if len(pin.Targets) > 0 || pin.PodTarget.CPU != nil || pin.PodTarget.Memory != nil {
			candidates = append(candidates, pin.Pod)
		}
	}
	var err error
	in.decision.Nodes, err = r.nodes(ctx, candidates)
	return err
}

// prepare resolves the policy's selector and gives it its state: kept across
// syncs, rebuilt on a spec change without losing what was learnt, and
// restored from the checkpoint when this process has not seen the policy.
func (r *Reconciler) prepare(ctx context.Context, policy *v1alpha1.TailorPolicy, now time.Time) (*store.PolicyState, error) {
	if err := policy.Spec.Validate(); err != nil {
		return nil, &invalidPolicyError{reason: v1alpha1.ReasonInvalidPolicy, err: err}
	}
	// A time zone or a cron field the CRD's rules cannot judge.
	if _, _, err := autoscale.LoweringLimitsOf(&policy.Spec); err != nil {
		return nil, &invalidPolicyError{reason: v1alpha1.ReasonInvalidPolicy, err: err}
	}
	state, known := r.store.Get(policy.UID)
	sel, cached := cachedSelector(policy, state, now)
	var template *corev1.PodTemplateSpec
	if !cached {
		var err error
		if sel, template, err = r.selector(ctx, policy); err != nil {
			return nil, err
		}
	}
	if !known {
		state = &store.PolicyState{
			Key:         types.NamespacedName{Namespace: policy.Namespace, Name: policy.Name},
			Model:       advise.NewModel(r.Recommender),
			Pods:        map[types.UID]*store.PodState{},
			Recreations: map[types.UID]v1alpha1.Recreation{},
		}
		// After a restart: replacements may still be on their way, and the
		// last eviction (no earlier than its entry) still paces the next.
		for _, rc := range policy.Status.Recreations {
			state.Recreations[types.UID(rc.OwnerUID)] = rc
			if rc.EvictionTime.After(state.LastEviction) {
				state.LastEviction = rc.EvictionTime.Time
			}
		}
		if err := r.checkpoints().Restore(ctx, policy, state); err != nil {
			return nil, err
		}
	}
	if !known || state.Generation != policy.Generation {
		if err := r.prepareSource(policy, state); err != nil {
			return nil, err
		}
		state.Generation = policy.Generation
	}
	if !cached {
		state.TargetRead = now
		state.Template = template
	}
	state.Selector = sel
	r.store.Put(policy.UID, state)
	return state, nil
}

// targetRefresh is how long a targetRef's selector is reused before the
// target is read again. The workloads' selectors are immutable (apps/v1),
// so a read only notices a target deleted, or recreated with another
// selector. Targets are read from the apiserver, not a cache (any kind
// with a spec.selector may be one, and caching it would mean watching
// every object of that kind in the cluster), so reading at every sync cost
// one GET per policy per sync period.
const targetRefresh = time.Minute

// cachedSelector is the target's selector as last read, while it is newer
// than targetRefresh and the policy's spec is unchanged; ok is false when
// it must be read.
func cachedSelector(policy *v1alpha1.TailorPolicy, state *store.PolicyState, now time.Time) (labels.Selector, bool) {
	if state != nil && policy.Spec.Selector == nil && state.Selector != nil &&
		state.Generation == policy.Generation && now.Sub(state.TargetRead) < targetRefresh {
		return state.Selector, true
	}
	return nil, false
}

// selector is the policy's own selector or its target's, with the target's
// pod template when it has one (what new pods are sized from at admission).
func (r *Reconciler) selector(ctx context.Context, policy *v1alpha1.TailorPolicy) (labels.Selector, *corev1.PodTemplateSpec, error) {
	if policy.Spec.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(policy.Spec.Selector)
		if err != nil {
			return nil, nil, &invalidPolicyError{reason: v1alpha1.ReasonInvalidSelector, err: fmt.Errorf("selector: %w", err)}
		}
		return sel, nil, nil
	}
	ref := policy.Spec.TargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, nil, &invalidPolicyError{reason: v1alpha1.ReasonInvalidPolicy, err: fmt.Errorf("targetRef.apiVersion: %w", err)}
	}
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(gv.WithKind(ref.Kind))
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: policy.Namespace, Name: ref.Name}, target); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil, nil, &invalidPolicyError{reason: v1alpha1.ReasonTargetNotFound,
				err: fmt.Errorf("targetRef %s %s/%s: %w", ref.Kind, policy.Namespace, ref.Name, err)}
		}
		return nil, nil, fmt.Errorf("reading targetRef %s %s/%s: %w", ref.Kind, policy.Namespace, ref.Name, err)
	}
	raw, found, err := unstructured.NestedMap(target.Object, "spec", "selector")
	if err != nil || !found {
		return nil, nil, &invalidPolicyError{reason: v1alpha1.ReasonTargetNotFound,
			err: fmt.Errorf("targetRef %s %s/%s has no spec.selector", ref.Kind, policy.Namespace, ref.Name)}
	}
	ls := &metav1.LabelSelector{}
	if err := runtimeConvert(raw, ls); err != nil {
		return nil, nil, &invalidPolicyError{reason: v1alpha1.ReasonInvalidSelector, err: fmt.Errorf("targetRef %s/%s selector: %w", ref.Kind, ref.Name, err)}
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, nil, &invalidPolicyError{reason: v1alpha1.ReasonInvalidSelector, err: fmt.Errorf("targetRef %s/%s selector: %w", ref.Kind, ref.Name, err)}
	}
	return sel, podTemplate(target), nil
}

// podTemplate is the target's spec.template cut to what sizing a new pod
// reads (at 1,000 policies a whole template each would weigh on the
// manager), or nil when the target has none that parses.
func podTemplate(target *unstructured.Unstructured) *corev1.PodTemplateSpec {
	raw, found, err := unstructured.NestedMap(target.Object, "spec", "template")
	if err != nil || !found {
		return nil
	}
	full := &corev1.PodTemplateSpec{}
	if err := runtimeConvert(raw, full); err != nil {
		return nil
	}
	slim := func(cs []corev1.Container) []corev1.Container {
		out := make([]corev1.Container, len(cs))
		for i, c := range cs {
			out[i] = corev1.Container{Name: c.Name, Resources: c.Resources, ResizePolicy: c.ResizePolicy, RestartPolicy: c.RestartPolicy}
		}
		return out
	}
	out := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: slim(full.Spec.Containers), InitContainers: slim(full.Spec.InitContainers),
		Resources: full.Spec.Resources, OS: full.Spec.OS,
		// Which nodes a new pod may land on: its size is cut to theirs.
		NodeSelector: full.Spec.NodeSelector, Tolerations: full.Spec.Tolerations,
	}}
	if a := full.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		out.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
		}}
	}
	return out
}

// pods lists the running pods a policy's label selector matches (the cheap
// first filter, before their owners are: ownPods), and those not yet bound
// to a node, each sorted by name.
func (r *Reconciler) pods(ctx context.Context, state *store.PolicyState) (running, unbound []*corev1.Pod, err error) {
	var list corev1.PodList
	if err := r.Client.List(ctx, &list, client.InNamespace(state.Key.Namespace), client.MatchingLabelsSelector{Selector: state.Selector}); err != nil {
		return nil, nil, fmt.Errorf("listing pods for policy %s: %w", state.Key, err)
	}
	for i := range list.Items {
		p := &list.Items[i]
		switch {
		case !p.DeletionTimestamp.IsZero():
		case p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "":
			running = append(running, p)
		case p.Status.Phase == corev1.PodPending && p.Spec.NodeName == "":
			unbound = append(unbound, p)
		}
	}
	sort.Slice(running, func(i, j int) bool { return running[i].Name < running[j].Name })
	sort.Slice(unbound, func(i, j int) bool { return unbound[i].Name < unbound[j].Name })
	return running, unbound, nil
}

// hpaHolds reads the HorizontalPodAutoscalers of the policy's namespace
// from the cache (an informer of every HPA in the cluster: there are few)
// and says which requests those scaling its target, or a workload its pods'
// chains reach (a selector policy's pods' Deployment), hold.
func (r *Reconciler) hpaHolds(ctx context.Context, policy *v1alpha1.TailorPolicy, chains []ownership.Chain) (ownership.Holds, string, error) {
	var target []ownership.Workload
	if ref := policy.Spec.TargetRef; ref != nil {
		target = append(target, ownership.WorkloadOf(ref.APIVersion, ref.Kind, ref.Name))
	}
	workloads := ownership.Workloads(chains, target...)
	if len(workloads) == 0 {
		return ownership.Holds{}, "", nil
	}
	var list autoscalingv2.HorizontalPodAutoscalerList
	if err := r.Client.List(ctx, &list, client.InNamespace(policy.Namespace)); err != nil {
		return ownership.Holds{}, "", fmt.Errorf("listing HorizontalPodAutoscalers of namespace %s: %w", policy.Namespace, err)
	}
	holds, text := ownership.HPAHolds(workloads, list.Items)
	return holds, text, nil
}

// newPodRoom reads the nodes a new pod of the policy's target could land on,
// when new pods are sized at admission: their allocatable, or their free
// room for a DaemonSet (whose new pod must fit the node it replaces one on)
// and while a pod tailor sized waits unschedulable.
func (r *Reconciler) newPodRoom(ctx context.Context, policy *v1alpha1.TailorPolicy, state *store.PolicyState, unbound []*corev1.Pod, now time.Time) (corev1.ResourceList, error) {
	ref := policy.Spec.TargetRef
	if ref == nil || state.Template == nil || policy.Spec.Mode() == v1alpha1.UpdateModeOff || !autoscale.ApplyOnCreate(&policy.Spec) {
		return nil, nil
	}
	in := autoscale.NewPodRoomInput{Template: state.Template, DaemonSet: ref.Kind == "DaemonSet"}
	stuck, _ := autoscale.DecideStuck(autoscale.StuckInput{Pods: unbound, Template: state.Template, Now: now.Add(autoscale.UnschedulableAfter)})
	in.Free = len(stuck) > 0
	if !in.Free && !in.DaemonSet {
		var nodes corev1.NodeList
		if err := r.Client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing nodes: %w", err)
		}
		for i := range nodes.Items {
			in.Nodes = append(in.Nodes, autoscale.NodePods{Node: &nodes.Items[i]})
		}
		return autoscale.NewPodRoom(in), nil
	}
	if in.DaemonSet {
		in.Own = func(p *corev1.Pod) bool {
			owner := metav1.GetControllerOf(p)
			return p.Namespace == policy.Namespace && owner != nil && owner.Kind == "DaemonSet" && owner.Name == ref.Name
		}
	}
	var err error
	if in.Nodes, err = r.nodesWithPods(ctx); err != nil {
		return nil, err
	}
	return autoscale.NewPodRoom(in), nil
}

// namespaceRules reads the namespace's LimitRanges and ResourceQuotas from
// the cache: the apiserver judges every pod and resize tailor asks for by
// them.
func (r *Reconciler) namespaceRules(ctx context.Context, namespace string) (*nsrules.Rules, error) {
	// Read only (nsrules copies what it changes): not copied at every sync.
	var ranges corev1.LimitRangeList
	if err := r.Client.List(ctx, &ranges, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing LimitRanges of namespace %s: %w", namespace, err)
	}
	var quotas corev1.ResourceQuotaList
	if err := r.Client.List(ctx, &quotas, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing ResourceQuotas of namespace %s: %w", namespace, err)
	}
	return &nsrules.Rules{LimitRanges: ranges.Items, Quotas: quotas.Items}, nil
}

// largestNode is the largest allocatable among the cluster's nodes, from
// the cache: what no container can use more of.
func (r *Reconciler) largestNode(ctx context.Context) (map[corev1.ResourceName]podchange.DefaultBound, error) {
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	ptrs := make([]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		ptrs[i] = &nodes.Items[i]
	}
	return podchange.LargestAllocatable(ptrs), nil
}

// nodes reads each node the pods run on once, with the pods bound to it. A
// node that is gone is left out: its pods are held, the others go on.
func (r *Reconciler) nodes(ctx context.Context, pods []*corev1.Pod) (map[string]*resize.NodeState, error) {
	out := map[string]*resize.NodeState{}
	for _, p := range pods {
		name := p.Spec.NodeName
		if _, done := out[name]; done {
			continue
		}
		node := &corev1.Node{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			if apierrors.IsNotFound(err) {
				out[name] = nil
				continue
			}
			return nil, fmt.Errorf("reading node %s: %w", name, err)
		}
		// Read only (the planner copies what it changes): the cache's
		// objects are not copied for it.
		var bound corev1.PodList
		if err := r.Client.List(ctx, &bound, client.MatchingFields{"spec.nodeName": name}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing pods on node %s: %w", name, err)
		}
		ns := &resize.NodeState{Allocatable: node.Status.Allocatable, Labels: node.Labels, DeclaredFeatures: node.Status.DeclaredFeatures}
		for i := range bound.Items {
			ns.Pods = append(ns.Pods, &bound.Items[i])
		}
		out[name] = ns
	}
	for name, ns := range out {
		if ns == nil {
			delete(out, name)
		}
	}
	return out, nil
}

// inFlight reports whether a resize of p, by tailor or anyone, is not
// finished: the kubelet has not seen it, is applying it or deferred it.
func inFlight(p *corev1.Pod) bool {
	switch observe(p).State {
	case actuator.StateProposed, actuator.StateInProgress, actuator.StateDeferred:
		return true
	}
	return false
}

// refused is what the kubelet said of p's last resize when it will not
// apply it: Infeasible, or an error applying it; "" otherwise.
func refused(p *corev1.Pod) string {
	o := observe(p)
	if o.State != actuator.StateInfeasible && o.State != actuator.StateError {
		return ""
	}
	what := "Infeasible"
	if o.State == actuator.StateError {
		what = "failed"
	}
	if o.Message != "" {
		what += ": " + o.Message
	}
	return what
}

// observe is actuator.Observe, also for a kubelet that does not report
// status.observedGeneration (1.33, where PodObservedGenerationTracking is
// off): there what it reports of the containers' resources, against the
// spec, says whether it has applied a resize, and the conditions say the
// rest.
func observe(p *corev1.Pod) actuator.Observation {
	if p.Status.ObservedGeneration != 0 {
		return actuator.Observe(p)
	}
	q := *p
	q.Status.ObservedGeneration = p.Generation
	return actuator.Observe(&q)
}

// lastResizeOf is when tailor last resized p, from the managedFields entries
// its resizes (and its in-place boosts) are recorded under; zero when none
// is there.
func lastResizeOf(p *corev1.Pod) time.Time {
	var last time.Time
	for _, mf := range p.ManagedFields {
		if (mf.Manager == actuator.FieldManager || mf.Manager == boost.FieldManager) && mf.Subresource == "resize" && mf.Time != nil && mf.Time.After(last) {
			last = mf.Time.Time
		}
	}
	return last
}

// nodeCapacities is the capacity of each node the pods run on, by name,
// from the cache; a node that is gone has none (its pods' figures are not
// checked against one).
func (r *Reconciler) nodeCapacities(ctx context.Context, pods []*corev1.Pod) (map[string]corev1.ResourceList, error) {
	out := map[string]corev1.ResourceList{}
	for _, p := range pods {
		if _, seen := out[p.Spec.NodeName]; seen {
			continue
		}
		node := &corev1.Node{}
		switch err := r.Client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node); {
		case apierrors.IsNotFound(err):
			out[p.Spec.NodeName] = nil
		case err != nil:
			return nil, fmt.Errorf("reading node %s: %w", p.Spec.NodeName, err)
		default:
			out[p.Spec.NodeName] = node.Status.Capacity
		}
	}
	return out, nil
}

// heldFor says which containers have no usable figures and why, counted by
// reason with the first problem; "" when all have (warming up, the first
// read of a counter, and not running are not a source's fault).
func heldFor(problems []metrics.Problem) string {
	byReason := map[metrics.Reason]int{}
	containers := map[metrics.Key]bool{}
	var first *metrics.Problem
	for i, p := range problems {
		if p.Reason == metrics.ReasonWarmingUp || p.Reason == metrics.ReasonNotRunning {
			continue
		}
		byReason[p.Reason]++
		containers[p.Key] = true
		// The least by name, not the first in order: sources list
		// problems in map order, and status must not change with it.
		if first == nil || p.String() < first.String() {
			first = &problems[i]
		}
	}
	if first == nil {
		return ""
	}
	reasons := make([]string, 0, len(byReason))
	for r, n := range byReason {
		reasons = append(reasons, fmt.Sprintf("%s %d", r, n))
	}
	sort.Strings(reasons)
	return fmt.Sprintf("%d container(s) without usable figures (%s), first %s", len(containers), strings.Join(reasons, ", "), first.String())
}

// nodesWithPods lists every node with the pods bound to it.
func (r *Reconciler) nodesWithPods(ctx context.Context) ([]autoscale.NodePods, error) {
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	out := make([]autoscale.NodePods, 0, len(nodes.Items))
	for i := range nodes.Items {
		n := &nodes.Items[i]
		var pods corev1.PodList
		if err := r.Client.List(ctx, &pods, client.MatchingFields{"spec.nodeName": n.Name}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing pods on node %s: %w", n.Name, err)
		}
		np := autoscale.NodePods{Node: n}
		for j := range pods.Items {
			np.Pods = append(np.Pods, &pods.Items[j])
		}
		out = append(out, np)
	}
	return out, nil
}

// runtimeConvert turns an unstructured map into a typed value.
func runtimeConvert(in map[string]any, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

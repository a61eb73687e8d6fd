package policy

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/recommend"
	"github.com/tailorhq/tailor/internal/resize"
)

// Event reasons, on pods and on the policy.
const (
	EventResized        = "Resized"
	EventResizeDeferred = "ResizeDeferred"
	EventResizeRefused  = "ResizeRefused"
	EventResizeSkipped  = "ResizeSkipped"
	EventResizeFailed   = "ResizeFailed"
	EventInvalidPolicy  = "InvalidPolicy"
	// EventResizeCapped: a raise was cut to what the node has room for.
	EventResizeCapped = "ResizeCapped"
)

// MemoryFloorHeadroom is what a memory limit keeps above the working set.
const MemoryFloorHeadroom = 0.1

// Reconciler right-sizes the pods a TailorPolicy selects, in place.
type Reconciler struct {
	Client   client.Client
	Clock    clock.PassiveClock
	Events   events.EventRecorder
	Source   metrics.Source
	Actuator *actuator.Actuator
	// SyncPeriod is how often usage is read for each policy.
	SyncPeriod time.Duration
	// Recommender is the configuration policies override.
	Recommender recommend.Config

	store *store
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// +kubebuilder:rbac:groups=autoscaling.tailor.dev,resources=tailorpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling.tailor.dev,resources=tailorpolicies/status,verbs=patch
// +kubebuilder:rbac:groups=autoscaling.tailor.dev,resources=tailorcheckpoints,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/resize,verbs=patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets;replicasets,verbs=get
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get

// SetupWithManager registers the controller: policies, and the pods they
// select, so an OOM kill or a finished resize is seen at once.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.store == nil {
		r.store = newStore()
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.TailorPolicy{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.policiesForPod)).
		Named("tailorpolicy").
		Complete(r)
}

func (r *Reconciler) policiesForPod(_ context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, key := range r.store.selecting(o.GetNamespace(), labels.Set(o.GetLabels())) {
		out = append(out, reconcile.Request{NamespacedName: key})
	}
	return out
}

// Reconcile gathers the policy's pods and their usage, decides, and acts.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	if r.store == nil {
		r.store = newStore()
	}
	policy := &v1alpha1.TailorPolicy{}
	if err := r.Client.Get(ctx, req.NamespacedName, policy); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if !policy.DeletionTimestamp.IsZero() {
		r.store.forget(policy.UID)
		return reconcile.Result{}, nil
	}
	now := r.Clock.Now()
	status := policy.Status.DeepCopy()
	status.ObservedGeneration = policy.Generation

	state, err := r.prepare(ctx, policy)
	if err != nil {
		var invalid *invalidPolicyError
		if errors.As(err, &invalid) {
			r.Events.Eventf(policy, nil, corev1.EventTypeWarning, EventInvalidPolicy, "Validate", invalid.Error())
			setCondition(status, v1alpha1.ConditionReady, metav1.ConditionFalse, invalid.reason, invalid.Error(), policy.Generation)
			return reconcile.Result{RequeueAfter: r.SyncPeriod}, r.writeStatus(ctx, policy, status)
		}
		return reconcile.Result{}, err
	}

	pods, err := r.pods(ctx, state)
	if err != nil {
		return reconcile.Result{}, err
	}
	usage, err := r.usageSource(state).Usage(ctx, pods)
	if err != nil {
		setCondition(status, v1alpha1.ConditionReady, metav1.ConditionFalse, "MetricsUnavailable",
			fmt.Sprintf("metrics source %s: %v; holding every pod", r.Source.Name(), err), policy.Generation)
		logger.Info("metrics source unavailable, holding", "source", r.Source.Name(), "err", err.Error())
		return reconcile.Result{RequeueAfter: r.SyncPeriod}, r.writeStatus(ctx, policy, status)
	}
	r.learn(state, pods, usage, now)
	state.problems = usage.Problems

	mode := policyMode(policy)
	blocked := map[string]string{}
	requeue := r.SyncPeriod
	inFlight := 0
	for _, p := range pods {
		if r.observeResize(policy, state, p, now) {
			inFlight++
		}
	}
	maxInFlight := 1
	if b := policy.Spec.Behavior; b != nil && b.MaxConcurrentResizes != nil {
		maxInFlight = int(*b.MaxConcurrentResizes)
	}
	// Recommend for every pod whatever the mode: Off publishes them.
	advice := make([]podAdvice, len(pods))
	for i, p := range pods {
		advice[i] = r.recommend(state, p, usage, now)
	}
	for i, p := range pods {
		if mode == v1alpha1.UpdateModeOff {
			break
		}
		if len(advice[i].targets) == 0 {
			continue
		}
		if inFlight >= maxInFlight {
			blocked["MaxConcurrentResizes"] = fmt.Sprintf("%d resizes in flight (maxConcurrentResizes %d)", inFlight, maxInFlight)
			break
		}
		sent, retry, err := r.resizePod(ctx, policy, state, p, advice[i], now, blocked)
		if err != nil {
			return reconcile.Result{}, err
		}
		if sent {
			inFlight++
		}
		if retry > 0 && retry < requeue {
			requeue = retry
		}
	}

	r.fillStatus(status, policy, state, pods, now, blocked)
	return reconcile.Result{RequeueAfter: requeue}, r.writeStatus(ctx, policy, status)
}

func policyMode(policy *v1alpha1.TailorPolicy) v1alpha1.UpdateMode {
	if policy.Spec.UpdatePolicy != nil && policy.Spec.UpdatePolicy.UpdateMode != "" {
		return policy.Spec.UpdatePolicy.UpdateMode
	}
	return v1alpha1.UpdateModeInPlace
}

type invalidPolicyError struct {
	reason string
	err    error
}

func (e *invalidPolicyError) Error() string { return e.err.Error() }

// prepare resolves the policy's selector and (re)builds its recommenders.
func (r *Reconciler) prepare(ctx context.Context, policy *v1alpha1.TailorPolicy) (*policyState, error) {
	if err := policy.Spec.Validate(); err != nil {
		return nil, &invalidPolicyError{reason: v1alpha1.ReasonInvalidPolicy, err: err}
	}
	sel, err := r.selector(ctx, policy)
	if err != nil {
		return nil, err
	}
	state, ok := r.store.get(policy.UID)
	if !ok || state.generation != policy.Generation {
		state = &policyState{
			generation:  policy.Generation,
			key:         types.NamespacedName{Namespace: policy.Namespace, Name: policy.Name},
			containers:  map[containerKey]*containerState{},
			pods:        map[types.UID]*podState{},
			recreations: map[types.UID]v1alpha1.Recreation{},
		}
		if old, had := r.store.get(policy.UID); had {
			// Keep what tailor did to pods across a spec change.
			state.pods, state.recreations, state.lastEviction = old.pods, old.recreations, old.lastEviction
		} else {
			// After a restart: replacements may still be on their way.
			for _, rc := range policy.Status.Recreations {
				state.recreations[types.UID(rc.OwnerUID)] = rc
			}
		}
		if err := r.prepareSource(policy, state); err != nil {
			return nil, err
		}
	}
	state.selector = sel
	// Every container the policy may meet gets its configuration checked
	// here, so a bad override is a status condition, not a crash later.
	state.configs = map[string]recommend.Config{}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(policy.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing pods for policy %s/%s: %w", policy.Namespace, policy.Name, err)
	}
	for i := range pods.Items {
		for _, c := range metrics.Containers(&pods.Items[i]) {
			if _, done := state.configs[c]; done {
				continue
			}
			cfg, err := recommenderConfig(r.Recommender, &policy.Spec, c)
			if err != nil {
				return nil, &invalidPolicyError{reason: v1alpha1.ReasonInvalidPolicy, err: err}
			}
			state.configs[c] = cfg
		}
	}
	r.store.put(policy.UID, state)
	return state, nil
}

// selector is the policy's own selector or its target's.
func (r *Reconciler) selector(ctx context.Context, policy *v1alpha1.TailorPolicy) (labels.Selector, error) {
	if policy.Spec.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(policy.Spec.Selector)
		if err != nil {
			return nil, &invalidPolicyError{reason: v1alpha1.ReasonInvalidSelector, err: fmt.Errorf("selector: %w", err)}
		}
		return sel, nil
	}
	ref := policy.Spec.TargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, &invalidPolicyError{reason: v1alpha1.ReasonInvalidPolicy, err: fmt.Errorf("targetRef.apiVersion: %w", err)}
	}
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(gv.WithKind(ref.Kind))
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: policy.Namespace, Name: ref.Name}, target); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil, &invalidPolicyError{reason: v1alpha1.ReasonTargetNotFound,
				err: fmt.Errorf("targetRef %s %s/%s: %w", ref.Kind, policy.Namespace, ref.Name, err)}
		}
		return nil, fmt.Errorf("reading targetRef %s %s/%s: %w", ref.Kind, policy.Namespace, ref.Name, err)
	}
	raw, found, err := unstructured.NestedMap(target.Object, "spec", "selector")
	if err != nil || !found {
		return nil, &invalidPolicyError{reason: v1alpha1.ReasonTargetNotFound,
			err: fmt.Errorf("targetRef %s %s/%s has no spec.selector", ref.Kind, policy.Namespace, ref.Name)}
	}
	ls := &metav1.LabelSelector{}
	if err := runtimeConvert(raw, ls); err != nil {
		return nil, &invalidPolicyError{reason: v1alpha1.ReasonInvalidSelector, err: fmt.Errorf("targetRef %s/%s selector: %w", ref.Kind, ref.Name, err)}
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, &invalidPolicyError{reason: v1alpha1.ReasonInvalidSelector, err: fmt.Errorf("targetRef %s/%s selector: %w", ref.Kind, ref.Name, err)}
	}
	return sel, nil
}

// pods lists the running pods a policy selects, sorted by name.
func (r *Reconciler) pods(ctx context.Context, state *policyState) ([]*corev1.Pod, error) {
	var list corev1.PodList
	if err := r.Client.List(ctx, &list, client.InNamespace(state.key.Namespace), client.MatchingLabelsSelector{Selector: state.selector}); err != nil {
		return nil, fmt.Errorf("listing pods for policy %s: %w", state.key, err)
	}
	var out []*corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" && p.DeletionTimestamp.IsZero() {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// learn feeds new usage and terminations to the recommenders.
func (r *Reconciler) learn(state *policyState, pods []*corev1.Pod, usage metrics.Result, now time.Time) {
	for _, p := range pods {
		ps := state.pod(p)
		for _, t := range metrics.Terminations(p, ps.lastEvent) {
			cs := r.containerState(state, containerKey{p.UID, t.Container})
			// The kubelet has been seen reporting a memcg OOM kill as reason
			// Error with exit code 137: with a memory limit, a SIGKILL counts
			// as one, since raising memory is the safe mistake.
			if t.OOMKilled || (t.SIGKILL && t.MemoryLimit > 0) {
				cs.state.RecordOOM(t.FinishedAt, t.MemoryLimit)
			} else {
				cs.state.RecordRestart(t.FinishedAt)
			}
			if t.FinishedAt.After(ps.lastEvent) {
				ps.lastEvent = t.FinishedAt
			}
		}
		for _, c := range metrics.Containers(p) {
			u, ok := usage.Usage[metrics.Key{Namespace: p.Namespace, Pod: p.Name, Container: c}]
			if !ok || !u.Time.After(ps.lastSample[c]) {
				continue
			}
			cs := r.containerState(state, containerKey{p.UID, c})
			cs.state.AddSample(recommend.Sample{CPU: u.CPU, Memory: u.Memory}, u.Time)
			if u.Throttled != nil {
				cs.state.RecordThrottling(u.Time, *u.Throttled, limited(p, c, corev1.ResourceCPU))
			}
			ps.lastSample[c] = u.Time
		}
	}
}

func (s *policyState) pod(p *corev1.Pod) *podState {
	ps, ok := s.pods[p.UID]
	if !ok {
		ps = &podState{name: p.Name, lastSample: map[string]time.Time{}}
		// Terminations from before tailor saw the pod are history the
		// recommender cannot date against its samples.
		ps.lastEvent = p.CreationTimestamp.Time
		s.pods[p.UID] = ps
	}
	return ps
}

func (r *Reconciler) containerState(state *policyState, key containerKey) *containerState {
	cs, ok := state.containers[key]
	if !ok {
		cfg, ok := state.configs[key.container]
		if !ok {
			// A container prepare did not see (the pod appeared since).
			cfg = r.Recommender
		}
		rec, err := recommend.New(cfg)
		if err != nil {
			// prepare validated every container's configuration.
			panic(fmt.Sprintf("recommender configuration for %q became invalid: %v", key.container, err))
		}
		cs = &containerState{state: rec.NewState()}
		state.containers[key] = cs
	}
	return cs
}

// requested is the container's request in cores or bytes (0 when unset): the
// value the recommendation sizes, so the one the recommender compares its
// target with.
func requested(p *corev1.Pod, container string, r corev1.ResourceName) float64 {
	c := findContainer(p, container)
	if c == nil {
		return 0
	}
	return quantityOf(c.Resources.Requests, r)
}

// limited is the container's limit in cores or bytes (0 when unset): the
// value CFS throttling is measured against.
func limited(p *corev1.Pod, container string, r corev1.ResourceName) float64 {
	c := findContainer(p, container)
	if c == nil {
		return 0
	}
	return quantityOf(c.Resources.Limits, r)
}

func quantityOf(l corev1.ResourceList, r corev1.ResourceName) float64 {
	q, ok := l[r]
	if !ok {
		return 0
	}
	if r == corev1.ResourceCPU {
		return float64(q.MilliValue()) / 1000
	}
	return float64(q.Value())
}

func findContainer(p *corev1.Pod, name string) *corev1.Container {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == name {
			return &p.Spec.Containers[i]
		}
	}
	for i := range p.Spec.InitContainers {
		if p.Spec.InitContainers[i].Name == name {
			return &p.Spec.InitContainers[i]
		}
	}
	return nil
}

// observeResize reports the outcome of tailor's last resize of p once, and
// whether that resize is still in flight.
func (r *Reconciler) observeResize(policy *v1alpha1.TailorPolicy, state *policyState, p *corev1.Pod, now time.Time) bool {
	ps := state.pod(p)
	if ps.resizeGeneration == 0 {
		return false
	}
	obs := actuator.Observe(p)
	if obs.Generation < ps.resizeGeneration {
		return true
	}
	ps.result, ps.message = string(obs.State), ps.change
	if obs.State != actuator.StateDone && obs.Message != "" {
		ps.message = ps.change + ": " + obs.Message
	}
	if ps.reported != string(obs.State) {
		ps.reported = string(obs.State)
		if obs.State == actuator.StateDone && !ps.sentRaiseSince.IsZero() {
			reactionSeconds.WithLabelValues(policy.Namespace, policy.Name).Observe(now.Sub(ps.sentRaiseSince).Seconds())
			ps.sentRaiseSince = time.Time{}
		}
		switch obs.State {
		case actuator.StateDeferred:
			r.Events.Eventf(p, policy, corev1.EventTypeWarning, EventResizeDeferred, "Resize", "kubelet deferred the resize: %s", obs.Message)
		case actuator.StateInfeasible, actuator.StateError:
			r.Events.Eventf(p, policy, corev1.EventTypeWarning, EventResizeFailed, "Resize", "%s: %s", obs.State, obs.Message)
		}
	}
	resizesInFlight.WithLabelValues(policy.Namespace, policy.Name).Set(0)
	return obs.State == actuator.StateProposed || obs.State == actuator.StateInProgress || obs.State == actuator.StateDeferred
}

// podAdvice is what the recommender says for one pod's containers.
type podAdvice struct {
	targets    map[string]autoscale.Target
	workingSet map[string]resource.Quantity
	// raiseSince is when the oldest evidence for a raise was taken.
	raiseSince time.Time
}

// recommend asks each container's recommender about one pod.
func (r *Reconciler) recommend(state *policyState, p *corev1.Pod, usage metrics.Result, now time.Time) podAdvice {
	a := podAdvice{targets: map[string]autoscale.Target{}, workingSet: map[string]resource.Quantity{}}
	ps := state.pod(p)
	for _, c := range metrics.Containers(p) {
		cs, ok := state.containers[containerKey{p.UID, c}]
		if !ok {
			continue
		}
		u, fresh := usage.Usage[metrics.Key{Namespace: p.Namespace, Pod: p.Name, Container: c}]
		if fresh {
			a.workingSet[c] = *resource.NewQuantity(int64(u.Memory), resource.BinarySI)
		}
		cur := recommend.Resources{CPU: requested(p, c, corev1.ResourceCPU), Memory: requested(p, c, corev1.ResourceMemory)}
		rec := cs.state.Recommend(cur, ps.lastResize, now)
		cs.last, cs.seen = rec, true
		t := autoscale.Target{}
		// Without fresh usage only a raise is allowed: an OOM-killed
		// container in a crash loop reports no usage and needs memory most;
		// missing data never lowers anything.
		if rec.CPU.Decision == recommend.Raise || (fresh && rec.CPU.Decision == recommend.Lower) {
			t.CPU = resource.NewMilliQuantity(int64(rec.CPU.Target*1000+0.5), resource.DecimalSI)
		}
		if rec.Memory.Decision == recommend.Raise || (fresh && rec.Memory.Decision == recommend.Lower) {
			t.Memory = resource.NewQuantity(int64(rec.Memory.Target), resource.BinarySI)
		}
		if t.CPU != nil || t.Memory != nil {
			a.targets[c] = t
		}
		if rec.CPU.Decision == recommend.Raise || rec.Memory.Decision == recommend.Raise {
			since := now
			if fresh && u.Time.Before(now) {
				since = u.Time
			}
			if oom := cs.state.LastOOM(); !oom.IsZero() && oom.Before(since) && oom.After(ps.lastResize) {
				since = oom
			}
			if a.raiseSince.IsZero() || since.Before(a.raiseSince) {
				a.raiseSince = since
			}
		}
	}
	switch {
	case a.raiseSince.IsZero():
		ps.raiseSince = time.Time{}
	case ps.raiseSince.IsZero() || a.raiseSince.Before(ps.raiseSince):
		ps.raiseSince = a.raiseSince
	}
	return a
}

// resizePod decides and, if there is something to do, sends one resize.
func (r *Reconciler) resizePod(ctx context.Context, policy *v1alpha1.TailorPolicy, state *policyState, p *corev1.Pod,
	advice podAdvice, now time.Time, blocked map[string]string) (bool, time.Duration, error) {
	logger := log.FromContext(ctx).WithValues("pod", klog.KObj(p))
	ps := state.pod(p)
	node, err := r.nodeState(ctx, p.Spec.NodeName)
	if err != nil {
		return false, 0, err
	}
	room, _ := resize.Room(p, node)
	decision, err := autoscale.Decide(autoscale.Input{
		Pod: p, Spec: &policy.Spec, Targets: advice.targets, WorkingSet: advice.workingSet,
		MemoryFloorHeadroom: MemoryFloorHeadroom, LastResize: ps.lastResize, Room: room, Now: now,
	})
	if err != nil {
		return false, 0, fmt.Errorf("deciding resize of pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	for _, s := range decision.Skips {
		switch s.Reason {
		case autoscale.SkipRestartNotAllowed, autoscale.SkipNotRequested:
			blocked[string(s.Reason)] = s.Message
			r.reportOnce(ps, p, policy, "skip:"+string(s.Reason)+s.Container, EventResizeSkipped, s.Message)
		case autoscale.SkipNoRoom:
			msg := fmt.Sprintf("container %s: %s", s.Container, s.Message)
			blocked[string(s.Reason)] = msg
			resizesTotal.WithLabelValues(policy.Namespace, policy.Name, "deferred").Inc()
			r.reportOnce(ps, p, policy, "nodefull:"+s.Container+string(s.Resource), EventResizeDeferred, "not sent: "+msg)
		}
	}
	if decision.RetryAfter == 0 && len(decision.Short) == 0 {
		ps.shortSince = time.Time{}
		state.dropPendingRecreation(p)
	}
	if len(decision.Short) > 0 && policyMode(policy) == v1alpha1.UpdateModeInPlaceOrRecreate {
		evicted, retry, err := r.considerRecreate(ctx, policy, state, p, advice, now, blocked)
		if evicted || err != nil {
			return false, 0, err
		}
		if decision.Empty() {
			return false, retry, nil
		}
	}
	if len(decision.Short) > 0 && !decision.Empty() {
		msg := shortText(decision.Short)
		blocked[string(autoscale.SkipNoRoom)] = msg
		key := "capped"
		for _, s := range decision.Short {
			key += ":" + s.Container + "/" + string(s.Resource) + "=" + s.Wanted.String()
		}
		r.reportOnce(ps, p, policy, key, EventResizeCapped, msg)
	}
	if decision.Empty() {
		return false, decision.RetryAfter, nil
	}

	plan, err := resize.Plan(resize.Input{Pod: p, Desired: decision.Desired, Node: node, Server: r.Actuator.Server.Version})
	if err != nil {
		return false, 0, fmt.Errorf("planning resize of pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	switch {
	case plan.NoChange:
		return false, 0, nil
	case plan.Outcome == resize.Refused:
		blocked[string(plan.Rule)] = plan.Message
		resizesTotal.WithLabelValues(policy.Namespace, policy.Name, "refused").Inc()
		r.reportOnce(ps, p, policy, "refused:"+string(plan.Rule), EventResizeRefused,
			fmt.Sprintf("not sent: Kubernetes would refuse it (rule %s): %s", plan.Rule, plan.Message))
		return false, 0, nil
	case plan.Predicted == resize.Deferred || plan.Predicted == resize.Infeasible:
		// Asking for what the node cannot give now only parks the pod in
		// PodResizePending; tailor waits for room instead and says so.
		msg := fmt.Sprintf("not sent: the node has no room now (%s)", headroomText(plan.Headroom))
		blocked["NodeFull"] = msg
		resizesTotal.WithLabelValues(policy.Namespace, policy.Name, "deferred").Inc()
		r.reportOnce(ps, p, policy, "nodefull", EventResizeDeferred, msg)
		return false, r.SyncPeriod, nil
	}

	applied, err := r.Actuator.Apply(ctx, p, plan.Patch, actuator.ApplyOptions{})
	if err != nil {
		var refusal *actuator.Refusal
		if errors.As(err, &refusal) {
			if refusal.Kind == actuator.RefusedConflict {
				// The pod changed under us: decide again from the new one.
				return false, time.Second, nil
			}
			blocked["Refused"+string(refusal.Kind)] = refusal.Error()
			resizesTotal.WithLabelValues(policy.Namespace, policy.Name, "refused").Inc()
			r.Events.Eventf(p, policy, corev1.EventTypeWarning, EventResizeRefused, "Resize", "%s", refusal.Error())
			return false, r.SyncPeriod, nil
		}
		return false, 0, err
	}
	ps.lastResize, ps.resizeGeneration, ps.reported = now, applied.Generation, ""
	ps.sentRaiseSince = time.Time{}
	if decision.Raises() {
		ps.sentRaiseSince = ps.raiseSince
		ps.raiseSince = time.Time{}
	}
	ps.change = describe(decision)
	ps.result, ps.message = string(actuator.StateProposed), ps.change
	resizesTotal.WithLabelValues(policy.Namespace, policy.Name, "sent").Inc()
	resizesInFlight.WithLabelValues(policy.Namespace, policy.Name).Inc()
	r.Events.Eventf(p, policy, corev1.EventTypeNormal, EventResized, "Resize", "%s", describe(decision))
	logger.Info("resize sent", "changes", describe(decision), "generation", applied.Generation)
	return true, 0, nil
}

func (r *Reconciler) reportOnce(ps *podState, p *corev1.Pod, policy *v1alpha1.TailorPolicy, key, reason, msg string) {
	if ps.reported == key {
		return
	}
	ps.reported = key
	r.Events.Eventf(p, policy, corev1.EventTypeWarning, reason, "Resize", "%s", msg)
}

func (r *Reconciler) nodeState(ctx context.Context, name string) (*resize.NodeState, error) {
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return nil, fmt.Errorf("reading node %s: %w", name, err)
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.MatchingFields{"spec.nodeName": name}); err != nil {
		return nil, fmt.Errorf("listing pods on node %s: %w", name, err)
	}
	ns := &resize.NodeState{Allocatable: node.Status.Allocatable, Labels: node.Labels, DeclaredFeatures: node.Status.DeclaredFeatures}
	for i := range pods.Items {
		ns.Pods = append(ns.Pods, &pods.Items[i])
	}
	return ns, nil
}

func headroomText(h resize.Headroom) string {
	if !h.Known {
		return "node headroom unknown"
	}
	var parts []string
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		free, need := h.Free[res], h.Needed[res]
		parts = append(parts, fmt.Sprintf("%s free %s, needed %s", res, free.String(), need.String()))
	}
	return strings.Join(parts, "; ")
}

// shortText says which raises the node's room cut, for events and status.
func shortText(short []autoscale.Shortfall) string {
	parts := make([]string, 0, len(short))
	for _, s := range short {
		parts = append(parts, fmt.Sprintf("container %s %s request raised to %s of the %s recommended: the node had %s free",
			s.Container, s.Resource, s.Got.String(), s.Wanted.String(), s.Room.String()))
	}
	return strings.Join(parts, "; ")
}

func describe(d autoscale.Decision) string {
	var parts []string
	for _, c := range d.Changes {
		s := fmt.Sprintf("%s %s request %s -> %s", c.Container, c.Resource, c.RequestBefore.String(), c.RequestNow.String())
		if c.LimitBefore != nil && c.LimitNow != nil {
			s += fmt.Sprintf(", limit %s -> %s", c.LimitBefore.String(), c.LimitNow.String())
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

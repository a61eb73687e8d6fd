package policy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/time/rate"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/advise"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/canary"
	"github.com/tailorhq/tailor/internal/autoscale/newpods"
	"github.com/tailorhq/tailor/internal/controller/policy/gather"
	"github.com/tailorhq/tailor/internal/controller/policy/policymetrics"
	"github.com/tailorhq/tailor/internal/controller/policy/policystatus"
	"github.com/tailorhq/tailor/internal/controller/policy/store"
	"github.com/tailorhq/tailor/internal/observation"
	"github.com/tailorhq/tailor/internal/podchange"
)

// What the controller reads (ClusterRole tailor-manager), bound
// cluster-wide: every pod and node counts toward a node's room.
// +kubebuilder:rbac:groups=autoscaling.tailor.dev,resources=tailorpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling.tailor.dev,resources=tailorcheckpoints,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets,verbs=get
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling.k8s.io,resources=verticalpodautoscalers,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=limitranges;resourcequotas,verbs=get;list;watch

// What it writes, all of it in the namespaces of the policies it syncs
// (ClusterRole tailor-manager-writes): bound cluster-wide, or, for a
// manager scoped to some namespaces (--namespaces), by a RoleBinding in
// each of them only.
// +kubebuilder:rbac:groups=autoscaling.tailor.dev,resources=tailorpolicies/status,verbs=patch,roleName=tailor-manager-writes
// +kubebuilder:rbac:groups=autoscaling.tailor.dev,resources=tailorcheckpoints,verbs=create;update;patch;delete,roleName=tailor-manager-writes
// +kubebuilder:rbac:groups="",resources=pods/resize,verbs=patch,roleName=tailor-manager-writes
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch,roleName=tailor-manager-writes

// SetupWithManager registers the controller: policies, and the pods they
// select, so an OOM kill or a finished resize is seen at once.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.makeStore()
	workers := r.ConcurrentSyncs
	if workers <= 0 {
		workers = DefaultConcurrentSyncs
	}
	owned := predicate.NewPredicateFuncs(func(o client.Object) bool { return r.Shard.Owns(o.GetNamespace()) })
	// A pod's chain to its Deployment goes through its ReplicaSet, whose
	// owner references are read from a cache of ReplicaSets' metadata
	// (trimmed to them: internal/manager). Its informer starts with the
	// manager, so missing RBAC stops the start instead of a sync.
	if _, err := mgr.GetCache().GetInformer(context.Background(), gather.ReplicaSetMeta(), cache.BlockUntilSynced(false)); err != nil {
		return fmt.Errorf("watching ReplicaSets' metadata: %w", err)
	}
	b := ctrl.NewControllerManagedBy(mgr)
	// A pod asked for room is lowered by its own policy's sync, which
	// need not wait its sync period.
	r.roomWake = make(chan event.GenericEvent, roomWakeBuffer)
	b = b.WatchesRawSource(source.Channel(r.roomWake, &handler.EnqueueRequestForObject{},
		source.WithPredicates[client.Object, reconcile.Request](owned)))
	if r.Wake != nil {
		b = b.WatchesRawSource(source.Channel(r.Wake, handler.EnqueueRequestsFromMapFunc(r.policiesForWake),
			source.WithPredicates[client.Object, reconcile.Request](owned)))
	}
	if r.VerticalPodAutoscalers == nil {
		// The CRD is looked for once: without it (no VPA installed) the
		// manager starts and looks for no VerticalPodAutoscaler.
		switch _, err := mgr.GetRESTMapper().RESTMapping(gather.VPAKind.GroupKind(), gather.VPAKind.Version); {
		case err == nil:
			r.VerticalPodAutoscalers = mgr.GetCache()
			vpa := &unstructured.Unstructured{}
			vpa.SetGroupVersionKind(gather.VPAKind)
			// A VPA created, changed or deleted holds or frees its
			// workload at once.
			b = b.Watches(vpa, handler.EnqueueRequestsFromMapFunc(r.policiesOfNamespace), builder.WithPredicates(owned, predicate.GenerationChangedPredicate{}))
		case meta.IsNoMatchError(err):
		default:
			mgr.GetLogger().Info("VerticalPodAutoscalers are not looked for: their API could not be discovered", "err", err.Error())
		}
	}
	return b.
		WithOptions(controller.Options{MaxConcurrentReconciles: workers, RateLimiter: retryLimiter(r.SyncPeriod)}).
		// Its own status writes do not change a policy's generation, so
		// they do not trigger another sync.
		For(&v1alpha1.TailorPolicy{}, builder.WithPredicates(owned, predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.policiesForPod), builder.WithPredicates(owned, podChangeMatters)).
		// An HPA created, changed or deleted changes which requests are
		// held at once; watching also starts its informer with the
		// manager, so missing RBAC stops the start instead of a sync.
		Watches(&autoscalingv2.HorizontalPodAutoscaler{}, handler.EnqueueRequestsFromMapFunc(r.policiesForHPA), builder.WithPredicates(owned, predicate.GenerationChangedPredicate{})).
		// A LimitRange or a quota's limits created, changed or deleted
		// change what every plan of the namespace may ask for: a new pod's
		// admission entry planned under the old rules could have the
		// apiserver refuse the rollout's pods until the next sync. A
		// quota's usage moves with every pod and is read at the next sync.
		Watches(&corev1.LimitRange{}, handler.EnqueueRequestsFromMapFunc(r.policiesOfNamespace), builder.WithPredicates(owned)).
		Watches(&corev1.ResourceQuota{}, handler.EnqueueRequestsFromMapFunc(r.policiesOfNamespace), builder.WithPredicates(owned, quotaLimitsChanged)).
		Named("tailorpolicy").
		Complete(r)
}

// retryLimiter paces the retries of a failed sync: controller-runtime's
// default backs off exponentially to 1000s, so a policy whose syncs failed
// through a 10s apiserver outage would next be tried about 10s after the
// apiserver came back, and one failing for minutes, minutes later. Here the
// backoff stops at the sync period: a failing policy is retried no less
// often than a healthy one syncs. The overall token bucket stays, so a burst
// of failures cannot flood the apiserver.
func retryLimiter(syncPeriod time.Duration) workqueue.TypedRateLimiter[reconcile.Request] {
	if syncPeriod <= 0 {
		return workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()
	}
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, syncPeriod),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// quotaLimitsChanged passes a quota's creation, deletion and a change of
// what it allows: its spec, and its status.hard, which the apiserver's
// quota check reads and the quota controller sets from the spec a moment
// after it changes. The used amounts the quota controller updates as the
// namespace's pods come and go do not pass.
var quotaLimitsChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.ResourceQuota)
		n, ok2 := e.ObjectNew.(*corev1.ResourceQuota)
		return !ok1 || !ok2 || !equality.Semantic.DeepEqual(o.Spec, n.Spec) || !equality.Semantic.DeepEqual(o.Status.Hard, n.Status.Hard)
	},
}

// podChangeMatters passes the pod events a sync must not wait for: a pod
// created, deleted or relabelled, started or stopped, a container restarted
// or killed, and any step of a resize (spec, observed generation, resize
// conditions, reported resources). Each event that passes costs a full sync
// of the policy, one usage read included; the kubelet's routine status
// updates are filtered out, since they would cost one each, and so is
// tailor's own resize: the sync that sent it knows it, and the kubelet's
// answer is the next event that matters.
var podChangeMatters = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Pod)
		n, ok2 := e.ObjectNew.(*corev1.Pod)
		if !ok1 || !ok2 {
			return true
		}
		if ownResize(o, n) {
			return false
		}
		return o.Generation != n.Generation ||
			o.Status.ObservedGeneration != n.Status.ObservedGeneration ||
			o.Status.Phase != n.Status.Phase ||
			!n.DeletionTimestamp.IsZero() ||
			!equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
			!equality.Semantic.DeepEqual(resizeConditions(o), resizeConditions(n)) ||
			!equality.Semantic.DeepEqual(containerStates(o), containerStates(n))
	},
}

// ownResize says whether the update from o to n is a resize tailor sent:
// the spec's generation moved and so did the time of tailor's managedFields
// entry for pods/resize, while nothing else a sync reacts to changed. Each
// write is its own watch event, so another writer's change does not hide in
// it; two of tailor's resizes of one pod within a second (the entry's
// precision) are not told apart, and pass.
func ownResize(o, n *corev1.Pod) bool {
	return o.Generation != n.Generation &&
		!gather.LastResize(n).Equal(gather.LastResize(o)) &&
		o.Status.ObservedGeneration == n.Status.ObservedGeneration &&
		o.Status.Phase == n.Status.Phase &&
		n.DeletionTimestamp.IsZero() &&
		equality.Semantic.DeepEqual(o.Labels, n.Labels) &&
		equality.Semantic.DeepEqual(resizeConditions(o), resizeConditions(n)) &&
		equality.Semantic.DeepEqual(containerStates(o), containerStates(n))
}

func resizeConditions(p *corev1.Pod) []corev1.PodCondition {
	var out []corev1.PodCondition
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress {
			out = append(out, c)
		}
	}
	return out
}

// containerStates are what a restart, a kill or an applied resize changes.
func containerStates(p *corev1.Pod) []any {
	var out []any
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, c := range list {
			out = append(out, c.Name, c.RestartCount, c.LastTerminationState, c.Resources, c.AllocatedResources)
		}
	}
	return out
}

func (r *Reconciler) policiesForPod(_ context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, key := range r.store.Selecting(o.GetNamespace(), labels.Set(o.GetLabels())) {
		out = append(out, reconcile.Request{NamespacedName: key})
	}
	return out
}

// policiesForWake maps a pod an agent's urgent report woke to the policies
// to sync now. Which pods a policy selects is known from its first sync;
// after a start, first syncs come from the initial list at the queue's low
// priority, so on a large cluster a policy may wait its turn behind
// thousands. Every policy of the pod's namespace not yet synced is woken
// too: a report that a container is on course for its limit does not wait
// behind the backlog. The namespace's policies are read only for a woken
// pod, which the waker's rate bounds, not for every pod event.
func (r *Reconciler) policiesForWake(ctx context.Context, o client.Object) []reconcile.Request {
	out := r.policiesForPod(ctx, o)
	var list v1alpha1.TailorPolicyList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return out
	}
	for _, p := range list.Items {
		if _, known := r.store.Get(p.UID); !known {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
		}
	}
	return out
}

// policiesForHPA maps an HPA to the policies of its namespace whose
// targetRef is the workload it scales, and to its selector policies, whose
// pods' workloads it may scale.
func (r *Reconciler) policiesForHPA(ctx context.Context, o client.Object) []reconcile.Request {
	hpa, ok := o.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return nil
	}
	var list v1alpha1.TailorPolicyList
	if err := r.Client.List(ctx, &list, client.InNamespace(hpa.Namespace)); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, p := range list.Items {
		if ref := p.Spec.TargetRef; ref == nil || ref.Kind == hpa.Spec.ScaleTargetRef.Kind && ref.Name == hpa.Spec.ScaleTargetRef.Name {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
		}
	}
	return out
}

// policiesOfNamespace maps an object (a VerticalPodAutoscaler, which may
// name any workload of its pods' chains) to every policy of its namespace.
func (r *Reconciler) policiesOfNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.TailorPolicyList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, p := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
	}
	return out
}

// Reconcile syncs one policy: gather reads (the spec parsed once), the
// facts are judged, advise learns and advises, autoscale.DecideSync decides
// everything the sync asks Kubernetes for, over all its pods at once, and
// act carries the decision out; status is written once, at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.makeStore()
	if !r.Shard.Owns(req.Namespace) {
		// Another shard's: its pods are cached cut down to their requests,
		// too little to decide on.
		return reconcile.Result{}, nil
	}
	policy := &v1alpha1.TailorPolicy{}
	if err := r.Client.Get(ctx, req.NamespacedName, policy); err != nil {
		if apierrors.IsNotFound(err) {
			// Its checkpoint goes with it: the apiserver collects it
			// through its owner reference.
			r.store.Forget("", req.NamespacedName)
			policymetrics.Forget(req.NamespacedName)
			r.forgetObserved(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if !policy.DeletionTimestamp.IsZero() {
		r.store.Forget(policy.UID, req.NamespacedName)
		policymetrics.Forget(req.NamespacedName)
		r.forgetObserved(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	now := r.Clock.Now()
	status := policy.Status.DeepCopy()
	status.ObservedGeneration = policy.Generation

	spec, err := gather.ParseSpec(policy)
	var state *store.PolicyState
	if err == nil {
		state, err = r.prepare(ctx, policy, spec, now)
	}
	var in *syncInput
	if err == nil {
		in, err = r.gather(ctx, policy, spec, state, now)
	}
	if err == nil {
		r.judge(policy, in, now)
		in.roomAsked = r.room.AskedOf(in.pods, now)
		err = r.advise(policy, in, now)
	}
	if err == nil {
		err = r.candidateNodes(ctx, policy, in)
	}
	if err != nil {
		var invalid *gather.InvalidPolicyError
		if errors.As(err, &invalid) {
			r.Events.Eventf(policy, nil, corev1.EventTypeWarning, EventInvalidPolicy, "Validate", invalid.Error())
			policystatus.SetCondition(status, v1alpha1.ConditionReady, metav1.ConditionFalse, invalid.Reason, invalid.Error(), policy.Generation)
			return reconcile.Result{RequeueAfter: r.SyncPeriod}, policystatus.Write(ctx, r.Client, policy, status)
		}
		return reconcile.Result{}, err
	}

	// The workload's recommendation, which status says and new pods are
	// planned from, as the model advises it this sync.
	// Within the bounds the sync decides by: a container whose policy sets
	// no maxAllowed gets the default (podchange.BoundedSpec).
	bounded, _ := podchange.BoundedSpec(&policy.Spec, in.defaults)
	if policy.Spec.NodeClasses != nil {
		if classes := in.state.Model.ClassRecommendations(bounded, in.views, now); len(classes) > 0 {
			in.recommendation = &v1alpha1.Recommendation{ContainerRecommendations: advise.Largest(classes), NodeClasses: classes}
		}
	} else if recs := in.state.Model.Recommendation(bounded, in.pods, now); len(recs) > 0 {
		in.recommendation = &v1alpha1.Recommendation{ContainerRecommendations: recs}
	}
	if in.spec.HasCanary {
		// What no canary has proven is not given to new pods, nor said
		// to be the workload's size.
		in.recommendation = canary.FloorRecommendation(in.recommendation, canary.Floor(in.state.Canary, in.pods))
	}
	// Without one this sync, status keeps the last it said, and new pods
	// are planned from that.
	forNewPods := in.recommendation
	if forNewPods == nil {
		forNewPods = policy.Status.Recommendation
	}
	input := autoscale.SyncInput{
		PolicyInput: in.decision, Unbound: in.unbound, Template: in.state.Template, Entry: policy.Status.Admission,
		NewPodRoom: in.newPodRoom, StuckSeen: in.state.StuckSeen, Settle: AdmissionSettle, BoostRaise: in.boostRaise,
		NewPods: newpods.EntryInput{
			Spec: &policy.Spec, Generation: policy.Generation, Template: in.state.Template, Recommendation: forNewPods,
			HeldByVPA: in.vpa, Conflict: in.conflict, Holds: in.decision.Holds, Room: in.newPodRoom, Rules: in.decision.Rules, Replicas: len(in.pods),
			Server: r.Actuator.Server.Version, Now: now,
		},
		Recreation:     r.recreationState(policy, in),
		Canary:         in.state.Canary,
		Guardrails:     in.guardrails,
		Lowered:        in.state.Lowered,
		Namespace:      in.namespace,
		CountLowerings: in.countLowerings,
		Largest:        in.largest,
		Room:           r.roomInput(policy, in, now),
	}
	decision, err := r.decideSync(ctx, policy, in, input)
	if err != nil {
		// Malformed input the decision cannot work on: a bug, not the
		// user's. Say so on the policy and try again next sync.
		r.actor().Announce(policy, actInput(in))
		policystatus.SetCondition(status, v1alpha1.ConditionReady, metav1.ConditionFalse, "DecisionFailed",
			fmt.Sprintf("deciding this policy's resizes failed: %v", err), policy.Generation)
		log.FromContext(ctx).Error(err, "deciding policy")
		return reconcile.Result{RequeueAfter: r.SyncPeriod}, policystatus.Write(ctx, r.Client, policy, status)
	}
	in.state.Canary, in.state.Lowered = decision.Canary.State, decision.Limits.Lowered
	r.postRoom(client.ObjectKeyFromObject(policy), decision, in, now)
	in.heapFits, in.jvms = heapFits(policy, in, decision.PolicyDecision)
	// Before act: a canary's state, and the budget's count, are on the
	// apiserver before the resizes they stand for are sent, so a manager that stops between the
	// two does not leave a canary lowered that its successor knows
	// nothing of (one whose resize never went out is let go next sync).
	if err := r.checkpoints().Write(ctx, policy, in.state, now); err != nil {
		// Losing a checkpoint costs warm-up after a restart, never a
		// resize (a canary's state, written again next sync, may be
		// lost with it): say so and carry on.
		log.FromContext(ctx).Error(err, "writing checkpoint")
	}
	done, actErr := r.actor().Act(ctx, policy, actInput(in), r.toAct(policy, in, decision), now)
	in.blocked = done.Blocked
	in.state.ForgetGone(in.pods, now)
	policystatus.Fill(status, policy, statusInput(in, r.Source.Name(), decision.Admission), now)
	policystatus.SetCanary(status, decision.Canary, policy.Generation)
	policystatus.SetLimits(status, policy, decision.Limits)
	policymetrics.SyncsTotal.WithLabelValues(policy.Namespace, policy.Name).Inc()
	if r.Observer != nil {
		r.Observer.Observe(req.NamespacedName, observation.Of(now, in.pods, in.usage, status.Recommendation, in.state.Template))
	}
	writeErr := policystatus.Write(ctx, r.Client, policy, status)
	if writeErr != nil {
		in.state.ForgetRecords(done.Recorded)
	}
	if err := errors.Join(actErr, writeErr); err != nil {
		// Retried with backoff; what failed is in ResizesBlocked.
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: done.Requeue}, nil
}

package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
)

// Delays and shares of the simulated kubelet's answers to a resize.
const (
	acceptDelay        = time.Second      // until the kubelet admits the resize (PodResizeInProgress)
	actuateDelay       = time.Second      // until the runtime has applied it
	deferredRetry      = 20 * time.Second // a Deferred resize is admitted when retried after this
	sharePctDeferred   = 5                // % of resizes first Deferred
	sharePctInfeasible = 2                // % of resizes Infeasible
)

// resizer is the simulated kubelets' resize handling: for every pod whose
// generation is ahead of status.observedGeneration it does, after a delay,
// what the kubelet's allocation and status managers write: a share
// PodResizePending Deferred (admitted on a retry later) or Infeasible (held
// until the next resize), the rest admitted (allocatedResources = spec,
// PodResizeInProgress) and then actuated (status resources = spec, the
// condition dropped), every write stamped with observedGeneration. The
// node's room is not checked: the nodes are larger than their pods' limits.
// It also records when each pod's generation moves, for the step timing.
type resizer struct {
	cs    kubernetes.Interface
	pods  map[string]*simPod // by namespace/name
	queue workqueue.TypedDelayingInterface[string]
	store cache.Store

	mu       sync.Mutex
	stage    map[string]string    // key -> "accepted" while actuating
	deferred map[string]int64     // key -> generation deferred once
	bumped   map[string]time.Time // key -> when the generation last moved
	writes   atomic.Int64
	bumps    atomic.Int64 // generation moves seen
	results  map[string]int
}

func newResizer(cs kubernetes.Interface, pods []*simPod) *resizer {
	r := &resizer{
		cs: cs, pods: map[string]*simPod{}, queue: workqueue.NewTypedDelayingQueue[string](),
		stage: map[string]string{}, deferred: map[string]int64{}, bumped: map[string]time.Time{}, results: map[string]int{},
	}
	for _, p := range pods {
		r.pods[p.ns+"/"+p.name] = p
	}
	return r
}

func (r *resizer) run(ctx context.Context) error {
	f := informers.NewSharedInformerFactory(r.cs, 0)
	inf := f.Core().V1().Pods().Informer()
	if err := inf.SetTransform(func(o any) (any, error) {
		if p, ok := o.(*corev1.Pod); ok {
			p.ManagedFields = nil
		}
		return o, nil
	}); err != nil {
		return err
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { r.consider(o.(*corev1.Pod)) },
		UpdateFunc: func(old, o any) {
			op, np := old.(*corev1.Pod), o.(*corev1.Pod)
			if np.Generation > op.Generation {
				r.mu.Lock()
				r.bumped[np.Namespace+"/"+np.Name] = time.Now()
				r.mu.Unlock()
				r.bumps.Add(1)
			}
			r.consider(np)
		},
	})
	if err != nil {
		return err
	}
	r.store = inf.GetStore()
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("pod informer did not sync")
	}
	for range 4 {
		go r.work(ctx)
	}
	go func() { <-ctx.Done(); r.queue.ShutDown() }()
	return nil
}

func (r *resizer) consider(p *corev1.Pod) {
	if p.Spec.NodeName == "" || p.Generation <= p.Status.ObservedGeneration && !hasResizeCondition(p, corev1.PodResizeInProgress) {
		return
	}
	key := p.Namespace + "/" + p.Name
	r.mu.Lock()
	accepted := r.stage[key] == "accepted"
	r.mu.Unlock()
	if accepted {
		return
	}
	r.queue.AddAfter(key, acceptDelay)
}

func (r *resizer) work(ctx context.Context) {
	for {
		key, quit := r.queue.Get()
		if quit {
			return
		}
		if err := r.answer(ctx, key); err != nil && ctx.Err() == nil {
			fmt.Printf("simulated kubelet: %s: %v\n", key, err)
		}
		r.queue.Done(key)
	}
}

// answer moves key's resize one step.
func (r *resizer) answer(ctx context.Context, key string) error {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	var next time.Duration
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		next = 0
		p, err := r.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		gen := p.Generation
		now := metav1.Now()
		r.mu.Lock()
		stage := r.stage[key]
		r.mu.Unlock()
		var outcome string
		switch {
		case stage == "accepted" && hasResizeCondition(p, corev1.PodResizeInProgress):
			// The runtime has applied it.
			setResources(p, true)
			dropResizeConditions(p)
			outcome = "done"
		case gen > p.Status.ObservedGeneration || hasResizeCondition(p, corev1.PodResizePending):
			roll := pct(key, gen)
			r.mu.Lock()
			deferredOnce := r.deferred[key] == gen
			r.mu.Unlock()
			dropResizeConditions(p)
			p.Status.ObservedGeneration = gen
			switch {
			case roll < sharePctInfeasible:
				p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
					Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible,
					Message: "Node didn't have enough capacity: cpu (simulated)", ObservedGeneration: gen, LastProbeTime: now, LastTransitionTime: now,
				})
				outcome = "infeasible"
			case roll < sharePctInfeasible+sharePctDeferred && !deferredOnce:
				p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
					Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonDeferred,
					Message: "Node didn't have enough resource: cpu (simulated)", ObservedGeneration: gen, LastProbeTime: now, LastTransitionTime: now,
				})
				outcome, next = "deferred", deferredRetry
			default:
				setResources(p, false)
				p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
					Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue, ObservedGeneration: gen, LastProbeTime: now, LastTransitionTime: now,
				})
				outcome, next = "accepted", actuateDelay
			}
		default:
			return nil
		}
		if _, err := r.cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			return err
		}
		r.writes.Add(1)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.results[outcome]++
		switch outcome {
		case "accepted":
			r.stage[key] = "accepted"
		case "deferred":
			r.deferred[key] = gen
			delete(r.stage, key)
		default:
			delete(r.stage, key)
		}
		if outcome == "done" {
			if sp := r.pods[key]; sp != nil {
				sp.setLimit(float64(p.Spec.Containers[0].Resources.Limits.Cpu().MilliValue()) / 1000)
			}
		}
		return nil
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil && next > 0 {
		r.queue.AddAfter(key, next)
	}
	return err
}

func pct(key string, gen int64) int {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d", key, gen)
	return int(h.Sum32() % 100)
}

func hasResizeCondition(p *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return true
		}
	}
	return false
}

func dropResizeConditions(p *corev1.Pod) {
	kept := p.Status.Conditions[:0]
	for _, c := range p.Status.Conditions {
		if c.Type != corev1.PodResizePending && c.Type != corev1.PodResizeInProgress {
			kept = append(kept, c)
		}
	}
	p.Status.Conditions = kept
}

// setResources writes the spec's resources as allocated and, once
// actuated, as the containers' running resources.
func setResources(p *corev1.Pod, actuated bool) {
	for _, c := range p.Spec.Containers {
		for i := range p.Status.ContainerStatuses {
			st := &p.Status.ContainerStatuses[i]
			if st.Name != c.Name {
				continue
			}
			st.AllocatedResources = c.Resources.Requests.DeepCopy()
			if actuated {
				st.Resources = c.Resources.DeepCopy()
			}
		}
	}
}

// generation is the pod's generation as last seen.
func (r *resizer) generation(key string) int64 {
	o, ok, _ := r.store.GetByKey(key)
	if !ok {
		return 0
	}
	return o.(*corev1.Pod).Generation
}

func (r *resizer) inFlight(key string) bool {
	o, ok, _ := r.store.GetByKey(key)
	if !ok {
		return true
	}
	p := o.(*corev1.Pod)
	return p.Generation > p.Status.ObservedGeneration || hasResizeCondition(p, corev1.PodResizePending) || hasResizeCondition(p, corev1.PodResizeInProgress)
}

func (r *resizer) bumpedAt(key string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bumped[key]
}

func (r *resizer) resultCounts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.results {
		out[k] = v
	}
	return out
}

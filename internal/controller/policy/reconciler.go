package policy

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/internal/controller/policy/act"
	"github.com/tailorhq/tailor/internal/controller/policy/gather"
	"github.com/tailorhq/tailor/internal/controller/policy/store"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/observation"
	"github.com/tailorhq/tailor/internal/recommend"
	"github.com/tailorhq/tailor/internal/shard"
)

// EventInvalidPolicy: the policy cannot be synced as it stands; the
// event, and its Ready condition, say why.
const EventInvalidPolicy = "InvalidPolicy"

// DefaultConcurrentSyncs is how many policies are synced at once. A sync
// mostly waits (for a node's kubelet pages, for the apiserver to take a
// resize or a status), so syncs one after another left a 10,000-pod,
// 1,000-policy manager's pass longer than its sync period on 2 cores (the
// scale benchmark, bench/cmd/scale-bench).
const DefaultConcurrentSyncs = 4

// MemoryFloorHeadroom is what a memory limit keeps above the working set.
const MemoryFloorHeadroom = 0.1

// Reconciler right-sizes the pods a TailorPolicy selects, in place.
type Reconciler struct {
	Client   client.Client
	Clock    clock.PassiveClock
	Events   events.EventRecorder
	Source   metrics.Source
	Actuator *actuator.Actuator
	// APIReader reads from the apiserver, past the cache, where the cache
	// may be behind (a checkpoint the cache has not seen yet); nil reads
	// only through Client.
	APIReader client.Reader
	// SyncPeriod is how often usage is read for each policy.
	SyncPeriod time.Duration
	// Recommender is the configuration policies override.
	Recommender recommend.Config
	// CheckpointInterval is how often learnt state is written at most;
	// 0 is store.DefaultCheckpointInterval.
	CheckpointInterval time.Duration
	// ConcurrentSyncs is how many policies are synced at once (one
	// policy is never synced twice at once); 0 is DefaultConcurrentSyncs.
	ConcurrentSyncs int
	// Observer, if set, is told what each sync saw and did (the
	// dashboard's history).
	Observer observation.Observer
	// Shard is the slice of namespaces whose policies this controller
	// syncs; the zero value is every namespace. Another shard's policies,
	// and the events of their pods and HPAs, are not its to act on; nor
	// are a scoped manager's other namespaces, whose objects but pods its
	// cache does not hold.
	Shard shard.Shard
	// AllowPreemption lets a policy's behavior.scaleUp.preemption send a
	// raise no room in place could be made for beyond its node's free
	// room, for the scheduler to preempt pods of lower priority for.
	AllowPreemption bool
	// PreemptionUnavailable, when set, is why the cluster's scheduler does
	// not preempt for a deferred resize (its feature gate is off, or the
	// server predates it): a policy asking for preemption is then held as
	// without AllowPreemption, with this reason, rather than sending raises
	// the kubelet defers and nobody makes room for.
	PreemptionUnavailable string
	// Guardrails asks the canaries' query guardrails; nil: the manager has
	// no Prometheus for them, and a policy with any is not Ready.
	Guardrails gather.GuardrailQuerier
	// Wake, if set, brings pods whose policies must sync now rather than
	// at their next sync: the node agent saw a container cross an urgent
	// threshold. Its sender coalesces and bounds them; the work queue
	// then holds each policy once however many of its pods woke.
	Wake <-chan event.GenericEvent
	// VerticalPodAutoscalers reads VerticalPodAutoscalers (as
	// unstructured: their CRD may not be installed). nil looks for none;
	// SetupWithManager sets it to the manager's cache when the CRD is
	// installed as the manager starts (installed later, it is seen after a
	// restart).
	VerticalPodAutoscalers client.Reader

	store     *store.Store
	storeOnce sync.Once
	// ledger counts, per namespace, the lowerings this process decided
	// for the namespace budgets (store.Ledger).
	ledger store.Ledger
	// room is where the policies' syncs meet to make room in place on a
	// full node, and roomWake brings the policies whose pods were asked
	// for room to sync now (nil without a manager: the tests sync them).
	room     store.RoomBoard
	roomWake chan event.GenericEvent
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// makeStore gives the controller its memory once: SetupWithManager does,
// before any worker runs, but a Reconciler called without it (the
// controller tier does) may first be called by several workers at once.
func (r *Reconciler) makeStore() {
	r.storeOnce.Do(func() {
		if r.store == nil {
			r.store = store.New()
		}
	})
}

func (r *Reconciler) forgetObserved(key types.NamespacedName) {
	if r.Observer != nil {
		r.Observer.Forget(key)
	}
}

// checkpoints keeps the policies' learnt state in their TailorCheckpoints.
func (r *Reconciler) checkpoints() *store.Checkpoints {
	return &store.Checkpoints{Client: r.Client, APIReader: r.APIReader, Interval: r.CheckpointInterval}
}

// actor carries out the decisions.
func (r *Reconciler) actor() *act.Actor {
	return &act.Actor{Client: r.Client, Events: r.Events, Actuator: r.Actuator, Source: r.Source, SyncPeriod: r.SyncPeriod, Observer: r.Observer}
}

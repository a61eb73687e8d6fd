package policy

import (
	"sync"

	"time"

	"github.com/prometheus/client_golang/prometheus"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/advise"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/controller/policy/policymetrics"
	"github.com/tailorhq/tailor/internal/metrics"
)

// store is the controller's memory between syncs: what the recommender has
// learnt per workload container and what tailor has done to each pod. The
// learnt part is checkpointed to a TailorCheckpoint and restored from it, so
// a restarted manager, or a new leader, carries on where the last one was.
type store struct {
	mu       sync.Mutex
	policies map[types.UID]*policyState
	// selectors are kept apart from the states, under the lock, because
	// pod events are mapped to policies on the informers' goroutines while
	// reconciles change them.
	selectors map[types.UID]policySelector
}

type policySelector struct {
	key      types.NamespacedName
	selector labels.Selector
}

func newStore() *store {
	return &store{policies: map[types.UID]*policyState{}, selectors: map[types.UID]policySelector{}}
}

// policyState is one TailorPolicy's memory.
type policyState struct {
	// generation the configuration was built for; a spec change rebuilds it.
	generation int64
	key        types.NamespacedName
	uid        types.UID
	selector   labels.Selector
	// targetRead is when the selector was last read from the policy's
	// target (targetRef).
	targetRead time.Time
	// template is the target's pod template as last read, cut to what
	// sizing new pods needs; nil for a selector policy or a target with
	// none.
	template *corev1.PodTemplateSpec
	// model is what was learnt of the workload: one recommender state per
	// container name, fed from every pod of it.
	model *advise.Model
	pods  map[types.UID]*podState
	// problems are why the last read left containers without usage.
	problems []metrics.Problem
	// metricsErr is why the last read returned no usage at all, nil when
	// it did.
	metricsErr error
	// rejecting: the last read left some containers without usable
	// figures, which an event has said.
	rejecting bool
	// recreations are what replacements of evicted pods get, by owner UID.
	recreations map[types.UID]v1alpha1.Recreation
	// lastEviction paces evictions: one per minResizeInterval per policy.
	lastEviction time.Time
	// stuckSeen is when each unschedulable pod tailor sized was first due
	// to be replaced (replaceStuck).
	stuckSeen map[types.UID]time.Time
	// source reads this policy's usage when it overrides the manager's
	// queries; nil means the manager's source.
	source metrics.Source
	// metricsIgnored says why the policy's query overrides are not used,
	// for the Ready condition; empty when they are, or when there are none.
	metricsIgnored string
	// checkpointed is when the workload states were last written.
	checkpointed time.Time
	// othersReported names the other policies and the VerticalPodAutoscaler
	// that sized some of the policy's pods at the last sync, which an event
	// has said.
	othersReported string
	// restoreProblem says why a checkpoint could not be read back, for the
	// Ready condition, until the next checkpoint replaces it.
	restoreProblem string
	// restoreUnsaid: a checkpoint could not be read back and no event has
	// said so yet.
	restoreUnsaid bool
	// canary is the state of the policy's canary as the last sync decided
	// it (autoscale.DecideSync), and canaryWritten as the checkpoint last
	// kept it: a change is written at once, not at the checkpoint interval.
	canary        autoscale.CanaryState
	canaryWritten *v1alpha1.CanaryCheckpoint
	// lowered are the pods the lowering budget counts, as the last sync
	// left them, and loweredWritten as the checkpoint last kept them:
	// written at once too, so a restart does not grant the hour again.
	lowered        autoscale.Lowered
	loweredWritten []v1alpha1.LoweredPod
}

// podState is what tailor remembers of one pod; all of it is either
// recovered from the pod (its last resize from managedFields, a resize in
// flight from its status) or a convenience that a restart only delays.
type podState struct {
	name string
	// memory is what the workload's model remembers of the pod: the
	// terminations it learnt from, what a boost goes back to.
	memory advise.PodMemory
	// lastResize is when tailor last sent a resize, and resizeGeneration the
	// pod generation it produced, to tell its outcome apart from older ones.
	lastResize       time.Time
	resizeGeneration int64
	result           string
	message          string
	// change says what the last resize changed.
	change string
	// raiseSince is the time of the usage sample (or OOM kill) that first
	// called for a raise not yet applied; sentRaiseSince is its value when
	// the resize carrying the raise went out. Both feed the reaction-latency
	// histogram.
	raiseSince, sentRaiseSince time.Time
	// shortSince is when a raise first found no room on the node, in a run
	// not since interrupted; zero when there is none.
	shortSince time.Time
	// evictionBlocked holds the last refused eviction while it stands.
	evictionBlocked evictionBlock
	// outcome is the last resize outcome an event was emitted for.
	outcome string
	// reported are the held-back states an event was emitted for and that
	// still stand, so one state gives one event and one count, not one per
	// sync; standing are those seen in the current sync.
	reported, standing map[string]bool
}

func (s *store) get(uid types.UID) (*policyState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.policies[uid]
	return p, ok
}

func (s *store) put(uid types.UID, p *policyState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A policy deleted and created again under its name before the delete
	// was seen leaves a state under its old UID: the name has one owner.
	for u, sel := range s.selectors {
		if u != uid && sel.key == p.key {
			delete(s.policies, u)
			delete(s.selectors, u)
		}
	}
	s.policies[uid] = p
	s.selectors[uid] = policySelector{key: p.key, selector: p.selector}
}

// forget drops a deleted policy's memory, by UID or, when only its name is
// left, by name.
func (s *store) forget(uid types.UID, key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for u, sel := range s.selectors {
		if u == uid || sel.key == key {
			delete(s.policies, u)
			delete(s.selectors, u)
		}
	}
}

// selecting returns the policies whose selector matches a pod's labels in
// its namespace, for mapping pod events to policies.
func (s *store) selecting(namespace string, podLabels labels.Set) []types.NamespacedName {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []types.NamespacedName
	for _, p := range s.selectors {
		if p.key.Namespace == namespace && p.selector != nil && p.selector.Matches(podLabels) {
			out = append(out, p.key)
		}
	}
	return out
}

func (s *policyState) pod(p *corev1.Pod) *podState {
	ps, ok := s.pods[p.UID]
	if !ok {
		ps = &podState{name: p.Name, memory: advise.NewPodMemory(p)}
		s.pods[p.UID] = ps
	}
	return ps
}

// forgetGone drops the pods that are no longer selected, except an evicted
// pod whose replacement may still come, and the containers nothing has been
// learnt of for longer than the recommender remembers.
func (s *policyState) forgetGone(pods []*corev1.Pod, now time.Time) {
	live := map[types.UID]bool{}
	for _, p := range pods {
		live[p.UID] = true
	}
	for uid, ps := range s.pods {
		keep := ps.result == stateEvicted && now.Sub(ps.lastResize) < RecreationTTL
		if !live[uid] && !keep {
			delete(s.pods, uid)
		}
	}
	for _, name := range s.model.ForgetStale(now) {
		policymetrics.Recommendation.DeletePartialMatch(prometheus.Labels{"namespace": s.key.Namespace, "policy": s.key.Name, "container": name})
	}
}

// evictionBlock is why a pod was last not evicted, and until when tailor
// does not ask again.
type evictionBlock struct {
	reason, message string
	until           time.Time
}

// stateEvicted is the podState result of a pod tailor evicted.
const stateEvicted = "Evicted"

// forgetRecords takes back the status.recreations entries of owners whose
// write failed: a pod is evicted only once its replacement's entry is on the
// apiserver, where the admission policy reads it.
func (s *policyState) forgetRecords(owners []types.UID) {
	for _, uid := range owners {
		delete(s.recreations, uid)
	}
}

// dropPendingRecreation takes back an entry written for p that was not
// followed by its eviction: new pods of the owner must not get resources
// meant for a replacement. An entry whose pod was evicted stays: its
// replacement may not be created yet.
func (s *policyState) dropPendingRecreation(p *corev1.Pod) {
	if ps, ok := s.pods[p.UID]; ok && ps.result == stateEvicted {
		return
	}
	for uid, rc := range s.recreations {
		if rc.EvictedPod == p.Name {
			delete(s.recreations, uid)
		}
	}
}

// RecreationTTL is how long a replacement may take to be created and still
// get the recommended resources from status.recreations: the store keeps a
// recreation entry that long after its pod's eviction.
const RecreationTTL = 10 * time.Minute

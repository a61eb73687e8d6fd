package store

import (
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/internal/advise"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/canary"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/limits"
	"github.com/tailorhq/tailor/internal/controller/policy/policymetrics"
	"github.com/tailorhq/tailor/internal/metrics"
)

// store is the controller's memory between syncs: what the recommender has
// learnt per workload container and what tailor has done to each pod. The
// learnt part is checkpointed to a TailorCheckpoint and restored from it, so
// a restarted manager, or a new leader, carries on where the last one was.
type Store struct {
	mu       sync.Mutex
	policies map[types.UID]*PolicyState
	// selectors are kept apart from the states, under the lock, because
	// pod events are mapped to policies on the informers' goroutines while
	// reconciles change them.
	selectors map[types.UID]policySelector
}

type policySelector struct {
	key      types.NamespacedName
	selector labels.Selector
}

func New() *Store {
	return &Store{policies: map[types.UID]*PolicyState{}, selectors: map[types.UID]policySelector{}}
}

// PolicyState is one TailorPolicy's memory.
type PolicyState struct {
	// generation the configuration was built for; a spec change rebuilds it.
	Generation int64
	Key        types.NamespacedName
	Selector   labels.Selector
	// targetRead is when the selector was last read from the policy's
	// target (targetRef).
	TargetRead time.Time
	// template is the target's pod template as last read, cut to what
	// sizing new pods needs; nil for a selector policy or a target with
	// none.
	Template *corev1.PodTemplateSpec
	// model is what was learnt of the workload: one recommender state per
	// container name, fed from every pod of it.
	Model *advise.Model
	Pods  map[types.UID]*PodState
	// problems are why the last read left containers without usage.
	Problems []metrics.Problem
	// metricsErr is why the last read returned no usage at all, nil when
	// it did.
	MetricsErr error
	// rejecting: the last read left some containers without usable
	// figures, which an event has said.
	Rejecting bool
	// recreations are what replacements of evicted pods get, by owner UID.
	Recreations map[types.UID]v1alpha1.Recreation
	// lastEviction paces evictions: one per minResizeInterval per policy.
	LastEviction time.Time
	// stuckSeen is when each unschedulable pod tailor sized was first due
	// to be replaced (replaceStuck).
	StuckSeen map[types.UID]time.Time
	// source reads this policy's usage when it overrides the manager's
	// queries; nil means the manager's source.
	Source metrics.Source
	// metricsIgnored says why the policy's query overrides are not used,
	// for the Ready condition; empty when they are, or when there are none.
	MetricsIgnored string
	// checkpointed is when the workload states were last written.
	checkpointed time.Time
	// othersReported names the other policies and the VerticalPodAutoscaler
	// that sized some of the policy's pods at the last sync, which an event
	// has said.
	OthersReported string
	// restoreProblem says why a checkpoint could not be read back, for the
	// Ready condition, until the next checkpoint replaces it.
	RestoreProblem string
	// restoreUnsaid: a checkpoint could not be read back and no event has
	// said so yet.
	RestoreUnsaid bool
	// canary is the state of the policy's canary as the last sync decided
	// it (autoscale.DecideSync), and canaryWritten as the checkpoint last
	// kept it: a change is written at once, not at the checkpoint interval.
	Canary        canary.State
	canaryWritten *v1alpha1.CanaryCheckpoint
	// lowered are the pods the lowering budget counts, as the last sync
	// left them, and loweredWritten as the checkpoint last kept them:
	// written at once too, so a restart does not grant the hour again.
	Lowered        limits.Lowered
	loweredWritten []v1alpha1.LoweredPod
}

// PodState is what tailor remembers of one pod; all of it is either
// recovered from the pod (its last resize from managedFields, a resize in
// flight from its status) or a convenience that a restart only delays.
type PodState struct {
	Name string
	// memory is what the workload's model remembers of the pod: the
	// terminations it learnt from, what a boost goes back to.
	Memory advise.PodMemory
	// lastResize is when tailor last sent a resize, and resizeGeneration the
	// pod generation it produced, to tell its outcome apart from older ones.
	LastResize       time.Time
	ResizeGeneration int64
	Result           string
	Message          string
	// change says what the last resize changed.
	Change string
	// raiseSince is the time of the usage sample (or OOM kill) that first
	// called for a raise not yet applied; sentRaiseSince is its value when
	// the resize carrying the raise went out. Both feed the reaction-latency
	// histogram.
	RaiseSince, SentRaiseSince time.Time
	// shortSince is when a raise first found no room on the node, in a run
	// not since interrupted; zero when there is none.
	ShortSince time.Time
	// NoRoomMade: the last sync found a raise of the pod short of room on
	// its node and no room could be made there in place.
	NoRoomMade bool
	// CutBackAt is when a raise sent for the scheduler to preempt for was
	// taken back, having stayed deferred: the pod is not sent another
	// such raise for fleet.PreemptionBackoff after it. Not checkpointed: after
	// a restart the pod may be sent one more.
	CutBackAt time.Time
	// evictionBlocked holds the last refused eviction while it stands.
	EvictionBlocked EvictionBlock
	// outcome is the last resize outcome an event was emitted for.
	Outcome string
	// reported are the held-back states an event was emitted for and that
	// still stand, so one state gives one event and one count, not one per
	// sync; standing are those seen in the current sync.
	reported, standing map[string]bool
}

func (s *Store) Get(uid types.UID) (*PolicyState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.policies[uid]
	return p, ok
}

func (s *Store) Put(uid types.UID, p *PolicyState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A policy deleted and created again under its name before the delete
	// was seen leaves a state under its old UID: the name has one owner.
	for u, sel := range s.selectors {
		if u != uid && sel.key == p.Key {
			delete(s.policies, u)
			delete(s.selectors, u)
		}
	}
	s.policies[uid] = p
	s.selectors[uid] = policySelector{key: p.Key, selector: p.Selector}
}

// forget drops a deleted policy's memory, by UID or, when only its name is
// left, by name.
func (s *Store) Forget(uid types.UID, key types.NamespacedName) {
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
func (s *Store) Selecting(namespace string, podLabels labels.Set) []types.NamespacedName {
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

func (s *PolicyState) Pod(p *corev1.Pod) *PodState {
	ps, ok := s.Pods[p.UID]
	if !ok {
		ps = &PodState{Name: p.Name, Memory: advise.NewPodMemory(p)}
		s.Pods[p.UID] = ps
	}
	return ps
}

// ForgetGone drops the pods that are no longer selected, except an evicted
// pod whose replacement may still come, and the containers nothing has been
// learnt of for longer than the recommender remembers.
func (s *PolicyState) ForgetGone(pods []*corev1.Pod, now time.Time) {
	live := map[types.UID]bool{}
	for _, p := range pods {
		live[p.UID] = true
	}
	for uid, ps := range s.Pods {
		keep := ps.Result == StateEvicted && now.Sub(ps.LastResize) < RecreationTTL
		if !live[uid] && !keep {
			delete(s.Pods, uid)
		}
	}
	for _, name := range s.Model.ForgetStale(now) {
		policymetrics.Recommendation.DeletePartialMatch(prometheus.Labels{"namespace": s.Key.Namespace, "policy": s.Key.Name, "container": name})
	}
}

// EvictionBlock is why a pod was last not evicted, and until when tailor
// does not ask again.
type EvictionBlock struct {
	Reason, Message string
	Until           time.Time
}

// StateEvicted is the PodState result of a pod tailor evicted.
const StateEvicted = "Evicted"

// ForgetRecords takes back the status.recreations entries of owners whose
// write failed: a pod is evicted only once its replacement's entry is on the
// apiserver, where the admission policy reads it.
func (s *PolicyState) ForgetRecords(owners []types.UID) {
	for _, uid := range owners {
		delete(s.Recreations, uid)
	}
}

// DropPendingRecreation takes back an entry written for p that was not
// followed by its eviction: new pods of the owner must not get resources
// meant for a replacement. An entry whose pod was evicted stays: its
// replacement may not be created yet.
func (s *PolicyState) DropPendingRecreation(p *corev1.Pod) {
	if ps, ok := s.Pods[p.UID]; ok && ps.Result == StateEvicted {
		return
	}
	for uid, rc := range s.Recreations {
		if rc.EvictedPod == p.Name {
			delete(s.Recreations, uid)
		}
	}
}

// RecreationTTL is how long a replacement may take to be created and still
// get the recommended resources from status.recreations: the store keeps a
// recreation entry that long after its pod's eviction.
const RecreationTTL = 10 * time.Minute

// SettleReports forgets the reported states that no longer stand, so one
// that comes back is reported again.
func (ps *PodState) SettleReports() {
	for k := range ps.reported {
		if !ps.standing[k] {
			delete(ps.reported, k)
		}
	}
	ps.standing = nil
}

// RecreationList is the unexpired recreations, sorted, for status.
func (s *PolicyState) RecreationList(now time.Time) []v1alpha1.Recreation {
	var out []v1alpha1.Recreation
	for uid, rc := range s.Recreations {
		if now.Sub(rc.EvictionTime.Time) >= RecreationTTL {
			delete(s.Recreations, uid)
			continue
		}
		out = append(out, rc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].OwnerUID < out[j].OwnerUID })
	return out
}

func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// Report records that a held-back state of the pod stands this sync, and
// says whether it is new, so that one state gives one event and one count,
// not one per sync.
func (ps *PodState) Report(key string) bool {
	if ps.standing == nil {
		ps.standing = map[string]bool{}
	}
	ps.standing[key] = true
	if ps.reported[key] {
		return false
	}
	if ps.reported == nil {
		ps.reported = map[string]bool{}
	}
	ps.reported[key] = true
	return true
}

// ResizeResult is the pod's last resize's result as status says it.
func (ps *PodState) ResizeResult() v1alpha1.ResizeResult {
	switch actuator.State(ps.Result) {
	case actuator.StateDone:
		return v1alpha1.ResizeResultDone
	case actuator.StateDeferred:
		return v1alpha1.ResizeResultDeferred
	case actuator.StateInfeasible:
		return v1alpha1.ResizeResultInfeasible
	case actuator.StateError:
		return v1alpha1.ResizeResultError
	case StateEvicted:
		return v1alpha1.ResizeResultEvicted
	}
	return v1alpha1.ResizeResultInProgress
}

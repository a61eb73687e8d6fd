package policy

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/recommend"
)

// store is the controller's memory between syncs: what the recommender has
// learnt and what tailor has done. It is rebuilt from usage after a restart,
// which costs a warm-up, never safety: with no history the recommender holds.
type store struct {
	mu       sync.Mutex
	policies map[types.UID]*policyState
}

func newStore() *store { return &store{policies: map[types.UID]*policyState{}} }

// policyState is one TailorPolicy's memory.
type policyState struct {
	// generation the recommenders were built for; a spec change rebuilds them.
	generation int64
	key        types.NamespacedName
	selector   labels.Selector
	// containers holds one recommender state per pod and container: the
	// recommender follows one series (its stabilization clock assumes its
	// advice is applied to that series), as the replay benchmark measures it.
	containers map[containerKey]*containerState
	// configs is each container's recommender configuration, with the
	// policy's overrides applied.
	configs map[string]recommend.Config
	pods    map[types.UID]*podState
	// problems are why the last read left containers without usage.
	problems []metrics.Problem
	// recreations are what replacements of evicted pods get, by owner UID.
	recreations map[types.UID]v1alpha1.Recreation
	// lastEviction paces evictions: one per minResizeInterval per policy.
	lastEviction time.Time
	// source reads this policy's usage when it overrides the manager's
	// queries; nil means the manager's source.
	source metrics.Source
	// metricsIgnored says why the policy's query overrides are not used,
	// for the Ready condition; empty when they are, or when there are none.
	metricsIgnored string
}

type containerKey struct {
	pod       types.UID
	container string
}

type containerState struct {
	state *recommend.State
	last  recommend.Recommendation
	// seen is true once a recommendation was made.
	seen bool
}

// podState is what tailor remembers of one pod.
type podState struct {
	name string
	// lastEvent is the newest termination already fed to the recommender.
	lastEvent time.Time
	// lastSample is the newest usage time already fed, per container.
	lastSample map[string]time.Time
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
	// reported is the last outcome an event was emitted for, so one state
	// gives one event, not one per sync.
	reported string
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
	s.policies[uid] = p
}

func (s *store) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.policies, uid)
}

// selecting returns the policies whose selector matches a pod's labels in
// its namespace, for mapping pod events to policies.
func (s *store) selecting(namespace string, podLabels labels.Set) []types.NamespacedName {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []types.NamespacedName
	for _, p := range s.policies {
		if p.key.Namespace == namespace && p.selector != nil && p.selector.Matches(podLabels) {
			out = append(out, p.key)
		}
	}
	return out
}

package autoscale_test

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	forkedreflect "k8s.io/apimachinery/third_party/forked/golang/reflect"
	schedhelper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/autoscale/autoscaletest"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/newpods"
	"github.com/tailorhq/tailor/internal/autoscale/placement"
	"github.com/tailorhq/tailor/internal/boost"
	"github.com/tailorhq/tailor/internal/ownership"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/propertytest"
	"github.com/tailorhq/tailor/internal/resize"
)

// TestDecideSyncInvariants draws thousands of namespaces as the policy
// controller finds them (autoscaletest.Sync: workloads with running and
// Pending pods, overlapping policies of every mode, HPAs found through the
// pods' owners, LimitRanges and quotas near full or not, nodes full or not)
// and holds everything DecideSync decides for each policy, and for the
// policy's next sync (the first one's state carried over as act leaves it),
// to the promises of issue #23:
//
//   - every in-place resize: as TestDecidePolicyInvariants holds them
//     (checkPolicyDecision: bounds, QoS, restarts, memory floor, HPA holds,
//     each node's room), and within every LimitRange and quota as the
//     apiserver admits it, each charged for those before it
//     (checkResizesAdmitted); none in mode Off;
//   - the admission entry: the new pod created from the template with it is
//     refused for nothing the template's own pod is not, by the LimitRanges
//     and by the quotas charged for this sync's resizes and the rollout's
//     other replicas; in its template's QoS class; no larger than
//     NewPodRoom nor the largest node it may land on (checkEntry); within
//     the bounds, keeping the requests an HPA holds; planned only for a
//     targetRef policy that wins its workload, for this generation;
//   - every recreation entry (Record, Evict): the replacement its
//     controller creates from its template with the entry passes the
//     LimitRanges and the quotas (charged for this sync's resizes, and for
//     what it asks beyond the pod it replaces), keeps its template's QoS
//     class (checkReplacement), keeps the bounds, the HPA's requests and
//     every container's memory above its working set, and fits a node it
//     may land on beside that node's pods; at most one eviction per
//     minResizeInterval, only after recreateAfter, and only of an entry
//     recorded for the pod and this generation that has stood Settle;
//   - every unschedulable pod replaced: tailor sized it above its template
//     as admitted, a new pod of it is now created smaller, it has stood
//     Settle, and where the entry is the one this sync plans, the new pod
//     fits the largest node;
//   - one owner per pod: no pod is resized, recreated or replaced by two
//     policies, each pod is sized by at most one, and no two policies'
//     entries could size one new pod;
//   - the decision is a function of its input: every input is decided
//     twice, alike; one case in eight is drawn again, to check that the
//     generator replays its seed, that the input drawn again decides the
//     same, whole, and that deciding changed nothing of its input.
//
// Only pods an admission policy of tailor's marked are judged unschedulable
// for tailor's sizing: one of an older ReplicaSet (a rollout) that its own,
// larger template made is never replaced. A marked one of an older
// ReplicaSet is counted: judged by the Deployment's template, it is replaced
// at most once, since its replacement comes from its own template unmarked.
//
// Each stat of syncFloors must reach its floor, so that a decision holding
// back what it should send fails too. The cases are shared among
// GOMAXPROCS workers, as in TestDecidePolicyInvariants. A failing case
// prints its seed: autoscaletest.Sync(seed) replays it, and
// TestSyncInvariantSeeds keeps it.
func TestDecideSyncInvariants(t *testing.T) {
	s, cases, seed, took := propertytest.Run(t, 5, runSyncCase)
	t.Logf("%d generated namespaces (seed %d) in %s: %d syncs decided (%d of policies in mode Off, %d next syncs), %d asked for every node; %d compared whole with the case drawn again",
		cases, seed, took.Round(time.Millisecond), s["syncs"], s["syncsOff"], s["secondSyncs"], s["needNodes"], s["comparedWhole"])
	t.Logf("in place: %d resizes sent (%d under a boost's field manager, %d within a LimitRange or quota), %d held (%d for the namespace's rules), %d requests kept for an HPA",
		s["sent"], s["sentBoost"], s["nsResizes"], s["held"], s["nsHeld"], s["heldRequests"])
	t.Logf("admission: %d entries planned for a workload, %d with containers checked (%d within LimitRanges or quotas, %d capped by a LimitRange, %d within a node's room, %d boosted), %d held for the namespace's rules, %d held for another policy, %d for a VPA",
		s["entriesPlanned"], s["entries"], s["entriesWithRules"], s["entriesClamped"], s["entriesRoom"], s["entriesBoosted"], s["entriesNsHeld"], s["entriesConflict"], s["entriesVPA"])
	t.Logf("recreation: %d steps, %d entries recorded and %d evictions checked (%d replacements on a node that could hold them; %d from an older template the entry does not fit), %d blocked (%s), %d waiting (%s)",
		s["recreateSteps"], s["recordSteps"], s["evictSteps"], s["replacementsPlaced"], s["recreationsOtherTemplate"], s["recreateBlocked"], reasons(s, "blocked:"), s["recreateWait"], reasons(s, "wait:"))
	t.Logf("unschedulable: %d pods judged, %d to replace, %d replaced (%d by what the sync plans, checked against the nodes); %d of an older ReplicaSet judged by the target's template, %d of them replaced",
		s["stuck"], s["stuckReplace"], s["stuckDue"], s["stuckPlaced"], s["stuckOtherTemplate"], s["stuckOtherTemplateReplaced"])
	t.Logf("owners: %d pods claimed by two policies or more, %d workloads named by two", s["contested"], s["targetsContested"])
	t.Logf("room: %d pods offered what they could give, %d lowered before their window ended to make room", s["roomOffers"], s["roomGiven"])
	propertytest.CheckFloors(t, s, cases, syncFloors)
}

// syncFloors are half the least of five runs of 10,000 cases of seeds 1
// to 5 (that least in the comment; drawn again when room-making joined the
// generator), so a seed's spread (a few percent)
// never fails them, while a decision that held back half of what it sends
// would.
var syncFloors = []propertytest.Floor{
	{Stat: "syncs", Per10k: 19905, Why: "the generator no longer draws several policies a namespace"},               // 39810
	{Stat: "secondSyncs", Per10k: 9952, Why: "policies' next syncs are no longer decided"},                          // 19905
	{Stat: "comparedWhole", Per10k: 600, Why: "inputs and decisions are no longer compared whole"},                  // 1201
	{Stat: "sent", Per10k: 1768, Why: "resizes are held back that should be sent"},                                  // 3537
	{Stat: "nsResizes", Per10k: 450, Why: "resizes within the namespace's rules are held back"},                     // 901
	{Stat: "sentBoost", Per10k: 51, Why: "no startup boost is given in place"},                                      // 102
	{Stat: "heldRequests", Per10k: 133, Why: "the generator no longer draws HPAs found through the pods' owners"},   // 266
	{Stat: "entries", Per10k: 2118, Why: "admission entries are held back that should be written"},                  // 4236
	{Stat: "entriesWithRules", Per10k: 1167, Why: "admission entries within the namespace's rules are held back"},   // 2334
	{Stat: "entriesClamped", Per10k: 213, Why: "admission entries are no longer clamped into LimitRanges"},          // 426
	{Stat: "entriesBoosted", Per10k: 422, Why: "new pods are not boosted"},                                          // 844
	{Stat: "entriesRoom", Per10k: 2118, Why: "admission entries are no longer cut to a node's room"},                // 4236
	{Stat: "entriesConflict", Per10k: 904, Why: "the generator no longer draws policies that lose their workload"},  // 1808
	{Stat: "needNodes", Per10k: 111, Why: "recreations no longer ask for the nodes"},                                // 223
	{Stat: "recordSteps", Per10k: 42, Why: "recreation entries are held back that should be recorded"},              // 85
	{Stat: "evictSteps", Per10k: 24, Why: "no pod is evicted once its entry has settled"},                           // 49
	{Stat: "replacementsPlaced", Per10k: 65, Why: "replacements are no longer checked against the nodes"},           // 131
	{Stat: "recreateBlocked", Per10k: 902, Why: "the generator no longer draws recreations that are blocked"},       // 1804
	{Stat: "stuckDue", Per10k: 194, Why: "unschedulable pods are no longer replaced"},                               // 389
	{Stat: "stuckPlaced", Per10k: 165, Why: "unschedulable pods' replacements are no longer checked against nodes"}, // 331
	{Stat: "roomGiven", Per10k: 123, Why: "no pod's stabilization window is cut short to make room"},                // 247
	{Stat: "roomOffers", Per10k: 15697, Why: "no pod says what room it could give"},                                 // 31394
	{Stat: "contested", Per10k: 4346, Why: "the generator no longer draws pods claimed by several policies"},        // 8693
}

func reasons(s map[string]int, prefix string) string {
	var out []string
	for k, v := range s {
		if r, ok := strings.CutPrefix(k, prefix); ok {
			out = append(out, fmt.Sprintf("%s %d", r, v))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func FuzzDecideSync(f *testing.F) {
	for i := range uint64(20) {
		f.Add(i)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		if msg := runSyncCase(seed, map[string]int{}); msg != "" {
			t.Fatal(msg)
		}
	})
}

// TestSyncInvariantSeeds replays the namespaces that found a bug in the
// whole sync's decision, each named for what went wrong before its fix.
// (Keeping a Burstable pod Burstable took a request under minAllowed: found
// by an earlier draw of the generator, kept by
// TestDecideKeepsQoSWithinMinAllowed and TestDecideDropsWhatOnlyMinAllowedKeepsBurstable.)
func TestSyncInvariantSeeds(t *testing.T) {
	cases := map[string]uint64{
		"a memory request of no whole MiB held for an HPA was rounded to whole MiB":                            2461,
		"a memory request above maxAllowed, kept beside its working set, was rounded up past maxAllowed":       422,
		"an entry cut to a DaemonSet node's free memory, a byte short of a whole MiB, was rounded up past":     217,
		"a pod was evicted whose sidecar's raise no node could hold":                                           899,
		"a container resized in place was recreated at its template's memory, under its working set":           4420,
		"a container resized in place was recreated at its template's size, which the quota refused":           10411,
		"a container resized in place was recreated at its template's size, which a LimitRange refused":        32653,
		"a pod waiting since before a LimitRange was replaced by one its defaults make larger":                 8301,
		"a pod waiting since before a LimitRange was judged sized above the template its defaults make larger": 1499,
		"an entry planned against the quotas as read, not as this sync's resizes left them, was refused":       3232,
		"the plan's pod carried the LimitRanger's default limit, which tailor's patch does not add":            14282530570486149874,
		"a resize the LimitRanger adds a cpu request to restarted a container the policy does not restart":     11087836287686981759,
		"an entry kept Burstable by a memory request under minAllowed, its limit held by a LimitRange ratio":   12338341272563483553,
	}
	for name, seed := range cases {
		t.Run(name, func(t *testing.T) {
			if msg := runSyncCase(seed, map[string]int{}); msg != "" {
				t.Errorf("autoscaletest.Sync(%d): %s", seed, msg)
			}
		})
	}
}

// semantic compares as apiequality.Semantic does, times by the instant,
// and selectors by what they select (nil too).
var semantic = func() forkedreflect.Equalities {
	e := forkedreflect.Equalities{}
	for k, v := range apiequality.Semantic.Equalities {
		e[k] = v
	}
	if err := e.AddFuncs(
		func(a, b time.Time) bool { return a.Equal(b) },
		// A targetRef policy's claimant has none.
		func(a, b labels.Selector) bool {
			return (a == nil) == (b == nil) && (a == nil || a.String() == b.String())
		},
		// A plan by what it says, and the pod it leaves.
		func(a, b resize.Result) bool { return e.DeepEqual(viewOf(&a), viewOf(&b)) },
	); err != nil {
		panic(err)
	}
	return e
}()

// planView is what a resize plan says, exported.
type planView struct {
	Outcome    resize.Outcome
	Rule       resize.Rule
	Message    string
	Violations []resize.Violation
	Predicted  resize.Prediction
	NoChange   bool
	QoS        [2]corev1.PodQOSClass
	Containers []resize.ContainerChange
	PodLevel   *resize.PodLevel
	Headroom   resize.Headroom
	Warnings   []string
	Patch      string
	After      *corev1.Pod
}

func viewOf(r *resize.Result) planView {
	return planView{Outcome: r.Outcome, Rule: r.Rule, Message: r.Message, Violations: r.Violations, Predicted: r.Predicted, NoChange: r.NoChange,
		QoS: [2]corev1.PodQOSClass{r.QoSBefore, r.QoSAfter}, Containers: r.Containers, PodLevel: r.PodLevel, Headroom: r.Headroom,
		Warnings: r.Warnings, Patch: string(r.Patch), After: r.AfterPod()}
}

// runSyncCase decides each policy of the namespace autoscaletest.Sync(seed)
// draws, and its next sync, and holds every decision to the promises
// (checkSync); then the decisions of all the policies together to one
// owner per pod.
func runSyncCase(seed uint64, stats map[string]int) string {
	c := autoscaletest.Sync(seed)
	// One case in eight is also drawn again, to compare whole: the
	// generator gives the same case for the seed, and deciding on it
	// changes none of its input (the controller hands the decision objects
	// of its caches, uncopied). Comparing whole costs more than the rest of
	// the case.
	var again autoscaletest.SyncCase
	whole := seed%8 == 0
	if whole {
		if again = autoscaletest.Sync(seed); !semantic.DeepEqual(c, again) {
			return "the generator drew another namespace for the same seed"
		}
	}
	first := make([]autoscale.SyncDecision, len(c.Syncs))
	for i, in := range c.Syncs {
		d, msg := decideSync(in, c.Nodes, stats)
		if msg != "" {
			return fmt.Sprintf("policy %s: %s", c.Policies[i].Name, msg)
		}
		if whole {
			twin, _ := decideSync(again.Syncs[i], again.Nodes, map[string]int{})
			if !semantic.DeepEqual(d, twin) {
				return fmt.Sprintf("policy %s: the same input, drawn again, decided otherwise", c.Policies[i].Name)
			}
		} else if twin, _ := decideSync(in, c.Nodes, map[string]int{}); syncDecisionText(twin) != syncDecisionText(d) {
			return fmt.Sprintf("policy %s: the same input decided otherwise the second time:\n%s\nthen:\n%s", c.Policies[i].Name, syncDecisionText(d), syncDecisionText(twin))
		}
		first[i] = d
		if msg := checkSync(c, in, c.Nodes, d, stats); msg != "" {
			return fmt.Sprintf("policy %s: %s", c.Policies[i].Name, msg)
		}
		next, nodes := nextSync(in, c.Nodes, d)
		d2, msg := decideSync(next, nodes, stats)
		if msg == "" {
			msg = checkSync(c, next, nodes, d2, stats)
		}
		if msg != "" {
			return fmt.Sprintf("policy %s, next sync: %s", c.Policies[i].Name, msg)
		}
		stats["secondSyncs"]++
	}
	if whole {
		if fresh := autoscaletest.Sync(seed); !semantic.DeepEqual(c, fresh) {
			return "deciding changed its input"
		}
		stats["comparedWhole"]++
	}
	return checkOneOwner(c, first, stats)
}

// syncDecisionText is what a decision asks for and holds back, and when it
// looks again, in order: what must not change between two decisions on one
// input.
func syncDecisionText(d autoscale.SyncDecision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "retry %s; stuck retry %s\n", d.RetryAfter, d.StuckRetry)
	for _, s := range d.Sends {
		fmt.Fprintf(&b, "send %s %q %s\n", s.Pod.Name, s.FieldManager, s.Plan.Patch)
	}
	for _, h := range d.Held {
		fmt.Fprintf(&b, "held %s %s %s %s\n", h.Pod.Name, h.Reason, h.Rule, h.Message)
	}
	names := slices.Sorted(maps.Keys(d.Decisions))
	for _, n := range names {
		dec := d.Decisions[n]
		fmt.Fprintf(&b, "decision %s %s %v %v %s\n", n, describeDesired(dec), notesOf(dec), dec.Skips, dec.RetryAfter)
	}
	if a := d.Admission; a != nil {
		fmt.Fprintf(&b, "admission %s/%s %d %q %q %q %s\n", a.TargetKind, a.TargetName, a.ObservedGeneration, a.Summary, a.Boost, a.Message, admittedText(a.Containers))
	}
	for _, st := range d.Recreate {
		fmt.Fprintf(&b, "recreate %s %s %s %s %s %s %d %s\n", st.Pod.Name, st.ShortSince, st.Step, st.Reason, st.Message, st.RetryAfter, st.Generation, placement.ContainersText(st.Containers))
	}
	for _, s := range d.Stuck {
		fmt.Fprintf(&b, "stuck %s %v %v %s %s\n", s.Pod.Name, s.Replace, s.Due, s.Since, s.Message)
	}
	for _, uid := range slices.Sorted(maps.Keys(d.StuckSeen)) {
		fmt.Fprintf(&b, "seen %s %s\n", uid, d.StuckSeen[uid])
	}
	for _, s := range d.Settled {
		fmt.Fprintf(&b, "settled %s %v\n", s.Pod.Name, s.DropEntry)
	}
	return b.String()
}

// decideSync decides as Reconcile does: without the nodes first, and with
// them when the decision asks.
func decideSync(in autoscale.SyncInput, nodes []placement.NodePods, stats map[string]int) (autoscale.SyncDecision, string) {
	d, wanted, err := autoscale.DecideSync(in)
	if err == nil && wanted != nil {
		stats["needNodes"]++
		if d != nil {
			return *d, "a decision returned with the nodes asked for"
		}
		d, err = wanted.Decide(nodes)
	}
	if err != nil {
		return autoscale.SyncDecision{}, fmt.Sprintf("DecideSync: %v", err)
	}
	return *d, ""
}

// nextSync is the policy's next sync, AdmissionSettle later, as act leaves
// its state, and the nodes then: the resizes sent are in flight (the
// apiserver took them: the pods' specs and the quotas' usage have them),
// the entries recorded stand, evicted pods and replaced unschedulable ones
// are gone, the eviction paces the next, each pod's run of shortfall goes
// on or ends, and status.admission is the entry planned.
func nextSync(in autoscale.SyncInput, nodes []placement.NodePods, d autoscale.SyncDecision) (autoscale.SyncInput, []placement.NodePods) {
	next := in
	now := in.Now.Add(autoscaletest.SyncSettle)
	next.Now, next.NewPods.Now = now, now
	resized := map[types.UID]*corev1.Pod{}
	gone := map[types.UID]bool{}
	rules := in.Rules
	for _, s := range d.Sends {
		after := s.Plan.AfterPod()
		resized[s.Pod.UID] = after
		if rules != nil {
			charged := rules.Charged(rules.Admitted(after), s.Pod, 1)
			rules = &charged
		}
	}
	next.Rules, next.NewPods.Rules = rules, rules
	rs := in.Recreation
	next.Recreation.ShortSince = maps.Clone(rs.ShortSince)
	next.Recreation.Blocked = maps.Clone(rs.Blocked)
	next.Recreation.Entries = maps.Clone(rs.Entries)
	for _, st := range d.Settled {
		next.Recreation.ShortSince[st.Pod.UID] = time.Time{}
	}
	interval := podchange.MinResizeInterval(in.Spec)
	for _, st := range d.Recreate {
		next.Recreation.ShortSince[st.Pod.UID] = st.ShortSince
		switch st.Step {
		case placement.RecreateRecord:
			next.Recreation.Entries[st.Owner.UID] = v1alpha1.Recreation{OwnerUID: string(st.Owner.UID), OwnerKind: st.Owner.Kind, OwnerName: st.Owner.Name,
				EvictedPod: st.Pod.Name, EvictionTime: metav1.NewTime(in.Now), ObservedGeneration: st.Generation, Containers: st.Containers}
		case placement.RecreateBlocked:
			next.Recreation.Blocked[st.Pod.UID] = autoscale.EvictionBlock{Until: in.Now.Add(interval), Reason: st.Reason, Message: st.Message}
		case placement.RecreateEvict:
			next.Recreation.LastEviction = in.Now
			gone[st.Pod.UID] = true
		}
	}
	if d.StuckSeen != nil {
		next.StuckSeen = maps.Clone(d.StuckSeen)
	}
	next.Unbound = nil
	for _, p := range in.Unbound {
		due := false
		for _, s := range d.Stuck {
			due = due || (s.Due && s.Pod.UID == p.UID)
		}
		if !due {
			next.Unbound = append(next.Unbound, p)
			continue
		}
		delete(next.StuckSeen, p.UID)
		if owner := metav1.GetControllerOf(p); owner != nil {
			delete(next.Recreation.Entries, owner.UID)
		}
	}
	if d.Admission != nil {
		next.Entry = d.Admission
	}
	swap := func(ps []*corev1.Pod) []*corev1.Pod {
		var out []*corev1.Pod
		for _, p := range ps {
			if q, ok := resized[p.UID]; ok {
				p = q
			}
			if !gone[p.UID] {
				out = append(out, p)
			}
		}
		return out
	}
	next.Pods = nil
	for _, pin := range in.Pods {
		if gone[pin.Pod.UID] {
			continue
		}
		if q, ok := resized[pin.Pod.UID]; ok {
			pin.Pod, pin.InFlight, pin.LastResize = q, true, in.Now
		}
		next.Pods = append(next.Pods, pin)
	}
	next.Nodes = map[string]*resize.NodeState{}
	for name, ns := range in.Nodes {
		n := *ns
		n.Pods = swap(ns.Pods)
		next.Nodes[name] = &n
	}
	next.NewPods.Replicas = len(next.Pods)
	var nextNodes []placement.NodePods
	for _, np := range nodes {
		nextNodes = append(nextNodes, placement.NodePods{Node: np.Node, Pods: swap(np.Pods)})
	}
	return next, nextNodes
}

func syncMode(spec *v1alpha1.TailorPolicySpec) v1alpha1.UpdateMode {
	if u := spec.UpdatePolicy; u != nil && u.UpdateMode != "" {
		return u.UpdateMode
	}
	return v1alpha1.UpdateModeInPlace
}

// checkSync holds one sync's decision to the promises (see
// TestDecideSyncInvariants); nodes are every node, as the decision was
// given them.
func checkSync(c autoscaletest.SyncCase, in autoscale.SyncInput, nodes []placement.NodePods, d autoscale.SyncDecision, stats map[string]int) string {
	mode := syncMode(in.Spec)
	stats["syncs"]++
	if mode == v1alpha1.UpdateModeOff {
		stats["syncsOff"]++
		if len(d.Resizes)+len(d.Sends)+len(d.Recreate)+len(d.Stuck) > 0 || d.Admission != nil {
			return fmt.Sprintf("mode Off: %d resizes, %d sends, %d recreations, %d unschedulable pods, admission %v", len(d.Resizes), len(d.Sends), len(d.Recreate), len(d.Stuck), d.Admission)
		}
	}
	if msg := checkPolicyDecision(in.PolicyInput, d.PolicyDecision, stats); msg != "" {
		return msg
	}
	for _, h := range d.Held {
		if h.Reason == fleet.HoldNamespaceRules {
			stats["nsHeld"]++
		}
	}
	if r := in.Rules; r != nil && len(r.LimitRanges)+len(r.Quotas) > 0 {
		if msg := checkResizesAdmitted(r, in.Server, d.PolicyDecision, stats); msg != "" {
			return msg
		}
	}
	if len(d.Sends) != len(d.Resizes) {
		return fmt.Sprintf("%d resizes decided, %d sent", len(d.Resizes), len(d.Sends))
	}
	for i, s := range d.Sends {
		if s.Pod != d.Resizes[i].Pod {
			return fmt.Sprintf("send %d is pod %s, resize %d pod %s", i, s.Pod.Name, i, d.Resizes[i].Pod.Name)
		}
		want := ""
		if boost.Gives(s.Decision, in.BoostRaise[s.Pod.UID]) {
			want = boost.FieldManager
			stats["sentBoost"]++
		}
		if s.FieldManager != want {
			return fmt.Sprintf("pod %s resized under field manager %q, want %q", s.Pod.Name, s.FieldManager, want)
		}
		stats["sent"]++
	}
	if msg := checkRoomGiven(in, d, stats); msg != "" {
		return msg
	}
	if msg := checkAdmission(in, nodes, d.Admission, d.Sends, stats); msg != "" {
		return "admission entry: " + msg
	}
	if msg := checkRecreate(c, in, nodes, d, stats); msg != "" {
		return msg
	}
	return checkStuck(c, in, nodes, d, stats)
}

// checkRoomGiven holds room made in place from the donor's side: a pod's
// stabilization window is cut short only for an ask standing for it from a
// pod of strictly higher priority, and only a pod on a node where room is
// sought says what it could give. Every other promise (bounds, floors, QoS,
// the node's room) checkPolicyDecision holds for a cut pod as for any.
func checkRoomGiven(in autoscale.SyncInput, d autoscale.SyncDecision, stats map[string]int) string {
	for _, g := range d.Room.Given {
		asked, ok := in.Room.Asked[g.Pod.UID]
		if !ok {
			return fmt.Sprintf("pod %s lowered early to make room no pod asked of it", g.Pod.Name)
		}
		if prio := schedhelper.PodPriority(g.Pod); asked.Priority <= prio {
			return fmt.Sprintf("pod %s of priority %d lowered early for a pod of priority %d", g.Pod.Name, prio, asked.Priority)
		}
		stats["roomGiven"]++
	}
	for uid := range d.Room.Offers {
		var on string
		for _, pin := range in.Pods {
			if pin.Pod.UID == uid {
				on = pin.Pod.Spec.NodeName
			}
		}
		if !in.Room.Sought[on] {
			return fmt.Sprintf("pod %s offers room on node %q, where none is sought", uid, on)
		}
		stats["roomOffers"]++
	}
	return ""
}

// admittedKinds are the kinds whose new pods the admission policy tells
// apart.
var admittedKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, "ReplicaSet": true, "Job": true}

// checkAdmission holds status.admission as the sync plans it: none in mode
// Off; containers only for a targetRef policy that sizes new pods and wins
// its workload, for this generation; and those pass checkEntry, keep the
// bounds and the requests an HPA holds, and fit the largest node a pod of
// the template may land on.
func checkAdmission(in autoscale.SyncInput, nodes []placement.NodePods, a *v1alpha1.Admission, sends []autoscale.Send, stats map[string]int) string {
	spec, np := in.Spec, in.NewPods
	if syncMode(spec) == v1alpha1.UpdateModeOff {
		return ""
	}
	if a == nil {
		return "none planned"
	}
	ref := spec.TargetRef
	switch {
	case ref == nil || np.Template == nil || !newpods.ApplyOnCreate(spec) || !admittedKinds[ref.Kind]:
	case np.HeldByVPA != "":
		stats["entriesVPA"]++
	case np.Conflict != "":
		stats["entriesConflict"]++
	default:
		stats["entriesPlanned"]++
	}
	if strings.Contains(a.Message, "apiserver would refuse") {
		stats["entriesNsHeld"]++
	}
	if len(a.Containers) == 0 {
		return ""
	}
	switch {
	case ref == nil || a.TargetKind != ref.Kind || a.TargetName != ref.Name:
		return fmt.Sprintf("planned for %s %s, the policy's target is %v", a.TargetKind, a.TargetName, ref)
	case a.ObservedGeneration != np.Generation:
		return fmt.Sprintf("planned for generation %d, the policy's is %d", a.ObservedGeneration, np.Generation)
	case !newpods.ApplyOnCreate(spec):
		return "planned with applyOnCreate false"
	case np.HeldByVPA != "" || np.Conflict != "":
		return fmt.Sprintf("planned for a workload another sizes: %s%s", np.HeldByVPA, np.Conflict)
	case np.Template == nil:
		return "planned without a template"
	case a.Boost != "" && spec.StartupBoost == nil:
		return "boosted without a startupBoost"
	}
	if a.Boost != "" {
		stats["entriesBoosted"]++
	}
	rules := in.Rules
	for _, s := range sends {
		after := rules.Admitted(s.Plan.AfterPod())
		charged := rules.Charged(after, s.Pod, 1)
		rules = &charged
	}
	created, msg := checkEntry(rules, np.Template, a.Containers, a.Summary, np.Room, max(np.Replicas, 1), stats)
	if msg != "" {
		return msg
	}
	asTemplate, _ := autoscaletest.Created(in.Rules, np.Template, nil)
	var bad []string
	for _, e := range a.Containers {
		pol, _ := spec.PolicyFor(e.Name)
		if pol.Mode != nil && *pol.Mode == v1alpha1.ContainerModeOff {
			bad = append(bad, fmt.Sprintf("container %s is mode Off", e.Name))
		}
		b, n := podcontainers.Named(asTemplate, e.Name), podcontainers.Named(created, e.Name)
		if b == nil || n == nil {
			bad = append(bad, fmt.Sprintf("container %s is not a running container of the template", e.Name))
			continue
		}
		bounded := b.Resources.DeepCopy()
		for r, q := range b.Resources.Requests {
			if l, ok := b.Resources.Limits[r]; ok && q.Cmp(l) > 0 {
				// A LimitRange's default limit below the template's
				// request: the apiserver refuses the template's pods, and
				// the entry, following the template's ratio (under 1),
				// may take the request under minAllowed to make one it
				// takes (autoscaletest.Sync(47063) draws one). Not held
				// to the bounds: the template's pod is no size at all.
				delete(bounded.Requests, r)
			}
		}
		bad = append(bad, checkBounds(pol, e.Name, *bounded, n.Resources)...)
		bad = append(bad, heldMoved(in.Holds, e.Name, b.Resources, n.Resources)...)
	}
	if len(bad) > 0 {
		return strings.Join(bad, "; ") + "\ntemplate as admitted: " + podText(asTemplate) + "\ncreated: " + podText(created)
	}
	most := largest(created, nodes)
	have := podRequests(asTemplate)
	for r, q := range podRequests(created) {
		m, ok := most[r]
		if !ok {
			continue
		}
		if t := have[r]; t.Cmp(m) > 0 {
			m = t
		}
		if q.Cmp(m) > 0 {
			return fmt.Sprintf("the new pod requests %s %s, no node it may land on has more than %s\ncreated: %s", q.String(), r, m.String(), podText(created))
		}
	}
	return ""
}

// largest is, per resource, the most allocatable of the nodes p may land
// on (mayLand).
func largest(p *corev1.Pod, nodes []placement.NodePods) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, np := range nodes {
		if !mayLand(p, np.Node) {
			continue
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := np.Node.Status.Allocatable[r]; ok && q.Cmp(out[r]) > 0 {
				out[r] = q
			}
		}
	}
	return out
}

// mayLand: n is Ready and schedulable, and p tolerates its taints (the
// generator draws no node selector or affinity).
func mayLand(p *corev1.Pod, n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return false
	}
	ready := false
	for _, c := range n.Status.Conditions {
		ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
	}
	_, untolerated := schedhelper.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
	return ready && !untolerated
}

// placed names a node that could take the replacement of p: one it may
// land on whose allocatable, less what every other pod bound there
// requests, holds what the replacement requests; "" when none. All pods
// have one priority: nothing is preempted.
func placed(p, replacement *corev1.Pod, nodes []placement.NodePods) string {
	need := podRequests(replacement)
	for _, np := range nodes {
		if !mayLand(replacement, np.Node) {
			continue
		}
		free := np.Node.Status.Allocatable.DeepCopy()
		for _, o := range np.Pods {
			if o.UID == p.UID {
				continue
			}
			for r, q := range resizeOwn(o) {
				if f, ok := free[r]; ok {
					f.Sub(q)
					free[r] = f
				}
			}
		}
		fits := true
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if n, f := need[r], free[r]; n.Cmp(f) > 0 {
				fits = false
			}
		}
		if fits {
			return np.Node.Name
		}
	}
	return ""
}

// checkRecreate holds the recreations of pods short of room: only in mode
// InPlaceOrRecreate, of pods short of room and not resized now, after
// recreateAfter, at most one eviction per minResizeInterval, an eviction
// only of an entry recorded for the pod and this generation that has stood
// Settle; and each recorded or evicted pod's replacement, created from its
// controller's template with the entry, passes checkReplacement, keeps the
// bounds, the HPA's requests and its memory above the working set, and
// fits a node beside the pods bound there.
func checkRecreate(c autoscaletest.SyncCase, in autoscale.SyncInput, nodes []placement.NodePods, d autoscale.SyncDecision, stats map[string]int) string {
	if len(d.Recreate) > 0 && syncMode(in.Spec) != v1alpha1.UpdateModeInPlaceOrRecreate {
		return fmt.Sprintf("%d recreation steps in mode %s", len(d.Recreate), syncMode(in.Spec))
	}
	sending := map[string]bool{}
	for _, s := range d.Sends {
		sending[s.Pod.Name] = true
	}
	rs := in.Recreation
	interval := podchange.MinResizeInterval(in.Spec)
	evictions := 0
	// The quotas as this sync's resizes leave them: the apiserver charges a
	// resize when it takes it, before any replacement is created.
	rules := in.Rules
	for _, s := range d.Sends {
		if rules != nil {
			after := rules.Admitted(s.Plan.AfterPod())
			charged := rules.Charged(after, s.Pod, 1)
			rules = &charged
		}
	}
	for _, st := range d.Recreate {
		stats["recreateSteps"]++
		p := st.Pod
		var pin fleet.PodInput
		for _, x := range in.Pods {
			if x.Pod.UID == p.UID {
				pin = x
			}
		}
		since := rs.ShortSince[p.UID]
		if since.IsZero() {
			since = in.Now
		}
		switch {
		case pin.Pod == nil:
			return fmt.Sprintf("pod %s recreated, not one of the policy's", p.Name)
		case sending[p.Name]:
			return fmt.Sprintf("pod %s both resized and recreated", p.Name)
		case len(d.Decisions[p.Name].Short) == 0:
			return fmt.Sprintf("pod %s recreated, not short of room", p.Name)
		case !st.ShortSince.Equal(since):
			return fmt.Sprintf("pod %s short of room since %s, want %s", p.Name, st.ShortSince, since)
		}
		switch st.Step {
		case placement.RecreateWait:
			stats["recreateWait"]++
			why := st.Reason
			switch {
			case why != "":
			case in.Now.Sub(since) < rs.RecreateAfter:
				why = "RecreateAfter"
			case st.Owner != nil:
				why = "Settle"
			default:
				why = "NothingToRecord"
			}
			stats["wait:"+why]++
			continue
		case placement.RecreateBlocked:
			stats["recreateBlocked"]++
			stats["blocked:"+st.Reason]++
			continue
		case placement.RecreateRecord:
			stats["recordSteps"]++
		case placement.RecreateEvict:
			stats["evictSteps"]++
			evictions++
			e, ok := rs.Entries[st.Owner.UID]
			switch {
			case !ok || e.EvictedPod != p.Name || e.ObservedGeneration != rs.Generation || !semantic.DeepEqual(e.Containers, st.Containers):
				return fmt.Sprintf("pod %s evicted without its entry recorded as it is now (%v)", p.Name, e)
			case e.EvictionTime.Add(in.Settle).After(in.Now):
				return fmt.Sprintf("pod %s evicted %s after its entry, before Settle", p.Name, in.Now.Sub(e.EvictionTime.Time))
			case !rs.LastEviction.IsZero() && in.Now.Sub(rs.LastEviction) < interval:
				return fmt.Sprintf("pod %s evicted %s after the last eviction, minResizeInterval %s", p.Name, in.Now.Sub(rs.LastEviction), interval)
			}
		default:
			return fmt.Sprintf("pod %s: step %s", p.Name, st.Step)
		}
		owner := metav1.GetControllerOf(p)
		switch {
		case in.Now.Sub(since) < rs.RecreateAfter:
			return fmt.Sprintf("pod %s recreated %s into its shortfall, recreateAfter %s", p.Name, in.Now.Sub(since), rs.RecreateAfter)
		case owner == nil || st.Owner == nil || owner.UID != st.Owner.UID:
			return fmt.Sprintf("pod %s recreated by %v, its controller is %v", p.Name, st.Owner, owner)
		case st.Generation != rs.Generation:
			return fmt.Sprintf("pod %s: entry for generation %d, the policy's is %d", p.Name, st.Generation, rs.Generation)
		}
		// The replacement comes from its controller's template: during a
		// rollout an older ReplicaSet's, which the entry (planned from the
		// target's) does not fit, and which creates it at its own size.
		template := c.PodTemplates[p.UID]
		entry := make([]v1alpha1.AdmittedContainer, len(st.Containers))
		for j, rc := range st.Containers {
			entry[j] = v1alpha1.AdmittedContainer(rc)
		}
		if _, notApplied := autoscaletest.Created(in.Rules, template, entry); notApplied != "" {
			stats["recreationsOtherTemplate"]++
			continue
		}
		created, msg := checkReplacement(rules, template, p, st.Containers, stats)
		if msg != "" {
			return msg
		}
		var bad []string
		for _, rc := range st.Containers {
			pol, _ := in.Spec.PolicyFor(rc.Name)
			b, n := podcontainers.Named(p, rc.Name), podcontainers.Named(created, rc.Name)
			bad = append(bad, checkBounds(pol, rc.Name, b.Resources, n.Resources)...)
			bad = append(bad, heldMoved(in.Holds, rc.Name, b.Resources, n.Resources)...)
		}
		for _, n := range podcontainers.Running(&created.Spec) {
			if b := podcontainers.Named(p, n.Name); b != nil {
				bad = append(bad, memoryFloor(n.Name, pin.WorkingSet, b.Resources, n.Resources, in.MemoryFloorHeadroom)...)
			}
		}
		if len(bad) > 0 {
			return fmt.Sprintf("pod %s: its replacement: %s\npod: %s\nreplacement: %s", p.Name, strings.Join(bad, "; "), podText(p), podText(created))
		}
		if placed(p, created, nodes) == "" {
			return fmt.Sprintf("pod %s: no node could take its replacement\npod: %s\nreplacement: %s\nnodes: %s", p.Name, podText(p), podText(created), nodesText(nodes))
		}
		stats["replacementsPlaced"]++
	}
	if evictions > 1 {
		return fmt.Sprintf("%d pods evicted in one sync", evictions)
	}
	return ""
}

func nodesText(nodes []placement.NodePods) string {
	var parts []string
	for _, np := range nodes {
		used := corev1.ResourceList{}
		for _, o := range np.Pods {
			for r, q := range resizeOwn(o) {
				u := used[r]
				u.Add(q)
				used[r] = u
			}
		}
		parts = append(parts, fmt.Sprintf("%s (may land %v) allocatable %s used %s", np.Node.Name, mayLand(&corev1.Pod{}, np.Node), listText(np.Node.Status.Allocatable), listText(used)))
	}
	return strings.Join(parts, "; ")
}

// checkStuck holds the unschedulable pods the sync judges: none in mode Off
// or without sizing at admission; each one of the policy's pods waiting
// unschedulable for UnschedulableAfter, sized above what its controller's
// template creates; replaced only when a new pod of it is now created
// smaller (by the entry the apiserver has, where that applies to it), and
// only once that has stood Settle; and, where the entry it is replaced by is
// the one this sync plans, into a pod that fits the largest node it may
// land on.
func checkStuck(c autoscaletest.SyncCase, in autoscale.SyncInput, nodes []placement.NodePods, d autoscale.SyncDecision, stats map[string]int) string {
	if len(d.Stuck) > 0 && !newpods.ApplyOnCreate(in.Spec) {
		return fmt.Sprintf("%d unschedulable pods judged where new pods are not sized at admission", len(d.Stuck))
	}
	for _, s := range d.Stuck {
		stats["stuck"]++
		p := s.Pod
		mine := false
		for _, u := range in.Unbound {
			mine = mine || u.UID == p.UID
		}
		waiting, since := placement.Unschedulable(p)
		switch {
		case !mine:
			return fmt.Sprintf("pod %s judged unschedulable, not one of the policy's waiting pods", p.Name)
		case !admittedBy(p):
			return fmt.Sprintf("pod %s judged sized by tailor, but no admission policy of tailor's marked it", p.Name)
		case !waiting || in.Now.Sub(since) < placement.UnschedulableAfter:
			return fmt.Sprintf("pod %s judged unschedulable: waiting %v since %s", p.Name, waiting, since)
		}
		template := c.PodTemplates[p.UID]
		if template != in.Template {
			// A pod tailor sized for an older ReplicaSet of the target (a
			// rollout): judged by the target's template, and replaced at
			// most once, since its controller creates the replacement
			// from its own template, which no entry fits, unmarked.
			// Counted (see TestDecideSyncInvariants).
			stats["stuckOtherTemplate"]++
			if s.Due {
				stats["stuckOtherTemplateReplaced"]++
			}
			continue
		}
		asTemplate, _ := autoscaletest.Created(in.Rules, template, nil)
		has := podRequests(p)
		if !anyAbove(has, podRequests(asTemplate)) {
			return fmt.Sprintf("pod %s judged sized above its template, which creates it as it is\npod: %s\ntemplate as admitted: %s", p.Name, podText(p), podText(asTemplate))
		}
		if !s.Replace {
			continue
		}
		stats["stuckReplace"]++
		replacement := asTemplate
		if e := in.Entry; e != nil && entryFor(e, p, in.NewPods.Generation) {
			if created, notApplied := autoscaletest.Created(in.Rules, template, e.Containers); notApplied == "" {
				replacement = created
			}
		}
		if !anyAbove(has, podRequests(replacement)) {
			return fmt.Sprintf("pod %s replaced by one no smaller\npod: %s\nreplacement: %s", p.Name, podText(p), podText(replacement))
		}
		if !s.Due {
			continue
		}
		stats["stuckDue"]++
		if first, ok := d.StuckSeen[p.UID]; !ok || first.Add(in.Settle).After(in.Now) {
			return fmt.Sprintf("pod %s replaced before Settle (first due %s, now %s)", p.Name, first, in.Now)
		}
		if d.Admission == nil || !semantic.DeepEqual(in.Entry, d.Admission) {
			continue
		}
		// The entry it is replaced by is what this sync plans too (planned
		// with the room new pods find): its replacement fits a node.
		most, have := largest(replacement, nodes), podRequests(asTemplate)
		for r, q := range podRequests(replacement) {
			if m, ok := most[r]; ok && q.Cmp(m) > 0 && q.Cmp(have[r]) > 0 {
				return fmt.Sprintf("pod %s replaced by one requesting %s %s, no node it may land on has more than %s\nreplacement: %s", p.Name, q.String(), r, m.String(), podText(replacement))
			}
		}
		stats["stuckPlaced"]++
	}
	return ""
}

// entryFor reports whether the admission policy would give a new pod of
// p's controller the entry: planned for the policy's generation, for that
// controller or, for a Deployment, its ReplicaSet of the pod's template
// hash.
func entryFor(e *v1alpha1.Admission, p *corev1.Pod, generation int64) bool {
	owner := metav1.GetControllerOf(p)
	if owner == nil || len(e.Containers) == 0 || e.ObservedGeneration != generation {
		return false
	}
	return (e.TargetKind == owner.Kind && e.TargetName == owner.Name) ||
		(e.TargetKind == "Deployment" && owner.Kind == "ReplicaSet" && p.Labels["pod-template-hash"] != "" &&
			owner.Name == e.TargetName+"-"+p.Labels["pod-template-hash"])
}

// anyAbove reports whether a asks more of any resource than b.
func anyAbove(a, b corev1.ResourceList) bool {
	for r, q := range a {
		if q.Cmp(b[r]) > 0 {
			return true
		}
	}
	return false
}

// checkOneOwner holds the decisions of all the namespace's policies
// together: no pod is resized, recreated or replaced by two of them, each
// pod is sized by at most one (its claimants that are not in mode Off
// agree on the winner), and no two entries could size one new pod (the
// admission policy would apply both).
func checkOneOwner(c autoscaletest.SyncCase, ds []autoscale.SyncDecision, stats map[string]int) string {
	actors := map[types.UID]map[string]bool{}
	act := func(p *corev1.Pod, policy string) {
		if actors[p.UID] == nil {
			actors[p.UID] = map[string]bool{}
		}
		actors[p.UID][policy] = true
	}
	for i, d := range ds {
		name := c.Policies[i].Name
		for _, s := range d.Sends {
			act(s.Pod, name)
		}
		for _, st := range d.Recreate {
			if st.Step == placement.RecreateRecord || st.Step == placement.RecreateEvict {
				act(st.Pod, name)
			}
		}
		for _, s := range d.Stuck {
			if s.Due {
				act(s.Pod, name)
			}
		}
	}
	for _, p := range c.Pods {
		if len(actors[p.UID]) > 1 {
			return fmt.Sprintf("pod %s acted on by %v", p.Name, actors[p.UID])
		}
		claims, sizes := 0, 0
		for i, pol := range c.Policies {
			if pol.RecommendOnly {
				continue
			}
			if pol.Claims(labels.Set(p.Labels), c.Chains[p.UID]) {
				claims++
			}
			if slices.Contains(c.Owned[i], p.Name) {
				sizes++
			}
		}
		if claims > 1 {
			stats["contested"]++
		}
		if p.Spec.NodeName != "" && sizes != min(claims, 1) && !vpaActs(c, p) {
			return fmt.Sprintf("pod %s: %d policies claim it, %d size it", p.Name, claims, sizes)
		}
	}
	targets := map[ownership.Workload]int{}
	for _, pol := range c.Policies {
		if pol.Target != nil && !pol.RecommendOnly {
			targets[*pol.Target]++
		}
	}
	for _, n := range targets {
		if n > 1 {
			stats["targetsContested"]++
		}
	}
	// The controllers of the namespace's pods, and the pods they create.
	for _, p := range c.Pods {
		var by []string
		for i, d := range ds {
			if d.Admission != nil && entryFor(d.Admission, p, c.Policies[i].Generation) {
				by = append(by, c.Policies[i].Name)
			}
		}
		if len(by) > 1 {
			return fmt.Sprintf("a new pod like %s would be sized by the entries of %v", p.Name, by)
		}
	}
	return ""
}

// vpaActs reports whether a VerticalPodAutoscaler sets p's resources: no
// policy sizes it then.
func vpaActs(c autoscaletest.SyncCase, p *corev1.Pod) bool {
	_, ok := ownership.VPAOn(c.Chains[p.UID], c.VPAs)
	return ok
}

// admittedBy reports whether an admission policy of tailor's marked p as
// sized by it (the manager's cache keeps the mark, not its text).
func admittedBy(p *corev1.Pod) bool {
	_, ok := p.Annotations[v1alpha1.AdmittedAnnotation]
	return ok
}

// admittedText is each admitted container as "name req-cpu/req-mem lim-cpu/lim-mem".
func admittedText(cs []v1alpha1.AdmittedContainer) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s %s/%s %s/%s", c.Name, c.Requests.Cpu(), c.Requests.Memory(), c.Limits.Cpu(), c.Limits.Memory()))
	}
	return out
}

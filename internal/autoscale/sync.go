package autoscale

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/lowering"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/canary"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/limits"
	"github.com/tailorhq/tailor/internal/autoscale/newpods"
	"github.com/tailorhq/tailor/internal/autoscale/placement"
	"github.com/tailorhq/tailor/internal/autoscale/room"
	"github.com/tailorhq/tailor/internal/boost"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/podchange"
)

// SyncInput is everything one sync of a policy decides on: its running
// pods' resizes (PolicyInput), and its pods waiting for a node.
type SyncInput struct {
	fleet.PolicyInput
	// Unbound are the policy's pods not yet bound to a node, and Template
	// and Entry what DecideStuck judges them by (StuckInput), the template
	// as the LimitRanges of Rules admit a pod of it.
	Unbound  []*corev1.Pod
	Template *corev1.PodTemplateSpec
	Entry    *v1alpha1.Admission
	// NewPodRoom is the most a new pod of the target may request and
	// still find a node; nil when unknown or not needed.
	NewPodRoom corev1.ResourceList
	// StuckSeen is when each unschedulable pod tailor sized was first due
	// to be replaced, as the last sync left it.
	StuckSeen map[types.UID]time.Time
	// Settle is how long a stuck pod stays due before it is replaced, so
	// the admission policy's informer has the entry that sizes its
	// replacement (the controller's AdmissionSettle).
	Settle time.Duration
	// BoostRaise names, by pod, the containers whose cpu target is a boost
	// given (the startup boost's advice).
	BoostRaise map[types.UID]map[string]bool
	// NewPods is what the admission entry is planned from (PlanEntry).
	NewPods newpods.EntryInput
	// Recreation is what deciding the recreation of a pod short of room
	// reads beyond the pod itself, in mode InPlaceOrRecreate.
	Recreation RecreationState
	// Canary is the state behavior.scaleDown.canary left at the last sync
	// (the zero value: none).
	Canary canary.State
	// Guardrails are the answers of the canary's query guardrails, by
	// name, asked for canary.LivePods this sync; a guardrail missing here
	// was not asked, and is unanswered.
	Guardrails map[string]canary.GuardrailAnswer
	// Lowered are the pods the lowering budget counted, as the last sync
	// left them (restored from the checkpoint after a restart).
	Lowered limits.Lowered
	// Namespace is what a namespace budget (budget.namespacePods) is
	// judged by; the zero value when the policy sets none.
	Namespace limits.NamespaceLowerings
	// CountLowerings: some policy of the namespace has a namespace budget,
	// which counts this policy's lowerings, so Limits.Lowered keeps them
	// even when the policy has no budget of its own.
	CountLowerings bool
	// Largest is the largest node's allocatable (LargestAllocatable): the
	// maxAllowed of a container whose policy sets none, where no
	// LimitRange of Rules gives a max (DefaultMaxAllowed).
	Largest map[corev1.ResourceName]podchange.DefaultBound
	// Room is what making room in place on a full node reads.
	Room RoomInput
}

// RecreationState is what DecideRecreate reads of a policy's past and its
// cluster, for DecideSync.
type RecreationState struct {
	// RecreateAfter is updatePolicy.recreateAfter, or its default.
	RecreateAfter time.Duration
	// ShortSince is when each pod's raise first found no room, in a run
	// not since interrupted (missing: this sync starts it).
	ShortSince map[types.UID]time.Time
	// LastEviction is the policy's last eviction (zero: none).
	LastEviction time.Time
	// Blocked is each pod's last refused eviction, while it stands.
	Blocked map[types.UID]EvictionBlock
	// Entries are the status.recreations entries by owner UID.
	Entries map[types.UID]v1alpha1.Recreation
	// Template is the target's template as the LimitRanger admits it, and
	// Generation the policy's: what an entry is planned for.
	Template   *corev1.PodTemplateSpec
	Generation int64
}

// EvictionBlock is why a pod's eviction was last refused, and until when
// it is not asked again.
type EvictionBlock struct {
	Until           time.Time
	Reason, Message string
}

// RecreateStepOf is what is done this sync about one pod short of room.
type RecreateStepOf struct {
	Pod *corev1.Pod
	// ShortSince is when its run of shortfall started.
	ShortSince time.Time
	placement.RecreateDecision
}

// SyncDecision is everything tailor asks Kubernetes for in one sync of a
// policy, and everything it holds back, each with its reason.
type SyncDecision struct {
	// PolicyDecision decides the running pods' resizes, and why the
	// others are held. In mode Off nothing of it is carried out but its
	// RetryAfter.
	fleet.PolicyDecision
	// Admission is status.admission: what new pods of the target are
	// created with, planned by the same rules (PlanEntry); nil in mode Off.
	Admission *v1alpha1.Admission
	// Sends are the resizes to send now, in order, each with the field
	// manager it goes under: boost.FieldManager for one that gives a
	// startup boost, "" for tailor's own.
	Sends []Send
	// Stuck are the unschedulable pods tailor sized, each with whether it
	// is replaced now; StuckSeen is StuckSeen for the next sync (nil:
	// unchanged), and StuckRetry when a pod not yet due becomes so (0:
	// none).
	Stuck      []StuckStep
	StuckSeen  map[types.UID]time.Time
	StuckRetry time.Duration
	// Recreate are the pods whose raise finds no room on their node and
	// is not sent, in mode InPlaceOrRecreate, each with what is done about
	// it now (DecideRecreate): wait, blocked, record its replacement's
	// resources, or evict it. At most one is evicted per
	// minResizeInterval, this sync's counted.
	Recreate []RecreateStepOf
	// Settled are the pods no longer short of their node's room (and not
	// waiting their turn): their run of shortfall ends.
	Settled []Settled
	// Canary is what the policy's canary did, and its state for the next
	// sync; its rollbacks are the first Sends.
	Canary canary.Outcome
	// Limits is what the change windows and the lowering budget held, and
	// the budget's state for the next sync.
	Limits limits.Outcome
	// DefaultMaxAllowed are the bounds the sync gave the containers whose
	// policy sets no maxAllowed (BoundedSpec), by resource.
	DefaultMaxAllowed map[corev1.ResourceName]podchange.DefaultBound
	// Room is what the policy's pods could give to make room, what was
	// given and asked, and the raises the room made.
	Room RoomOutcome
}

// Send is a resize to send now.
type Send struct {
	fleet.Action
	FieldManager string
}

// StuckStep is an unschedulable pod and what is done with it this sync.
type StuckStep struct {
	placement.Stuck
	// Due: delete it now, so its controller creates one that fits. False:
	// the entry comes down first, or it has not stood Settle yet.
	Due bool
}

// Settled is a pod whose shortfall ended.
type Settled struct {
	Pod *corev1.Pod
	// DropEntry: a status.recreations entry made for it and not followed
	// by an eviction comes down (it is not waiting out minResizeInterval).
	DropEntry bool
}

// DecideSync decides one whole sync of a policy, in steps over in, which it
// leaves as it is:
//
//   - the bounds every part sizes within (sized);
//   - what each running pod on a node where room is sought could give to
//     make room (room.OfferOf), before a standing ask for room from a pod
//     of higher priority cuts its stabilization window short (cutForAsks);
//   - the running pods' resizes and holds (DecidePolicy), through the gates
//     that hold lowerings back: a canary, then the change windows and
//     lowering budgets (decidePolicy); the canary's rollbacks go first;
//   - the admission entry new pods are created with, after those resizes;
//   - and, unless the mode is Off: the unschedulable pods to replace (each
//     due once it has stood Settle), the field manager each resize goes
//     under, the room sought on, then asked of lower-priority pods for,
//     each raise its node's room cut (makeRoom), the pods no longer short of room, and the
//     recreation of those still short for which no room is asked, in mode
//     InPlaceOrRecreate.
//
// Whether a pod short of room may be recreated elsewhere needs every node
// with its pods, which cost to list: when one does, DecideSync returns no
// decision but a NodesWanted, whose Decide, given the nodes, is the only
// way to the rest of it. Otherwise the decision is whole and the
// NodesWanted nil.
func DecideSync(in SyncInput) (*SyncDecision, *NodesWanted, error) {
	if in.Spec == nil {
		return nil, nil, fmt.Errorf("decide sync: the policy spec is required")
	}
	policy, entry, maxAllowed := in.sized()
	offers, err := in.offers(policy)
	if err != nil {
		return nil, nil, err
	}
	policy, cut := in.cutForAsks(policy)
	d, co, lo, err := in.decidePolicy(policy)
	if err != nil {
		return nil, nil, err
	}
	out := SyncDecision{PolicyDecision: d, Canary: co, Limits: lo, DefaultMaxAllowed: maxAllowed,
		Admission: admission(entry, d.Resizes), Room: RoomOutcome{Offers: offers}}
	spec := policy.Spec
	if spec.Mode() == v1alpha1.UpdateModeOff {
		return &out, nil, nil
	}
	out.Room.Given = given(d, cut)
	out.Room.Asks, out.Room.Seek, out.Room.Made, out.PolicyDecision = in.makeRoom(out.PolicyDecision)
	// New pods and replacements are created after this sync's resizes,
	// which the apiserver charges to the quotas as it takes them.
	rules := chargedBy(in.Rules, d.Resizes)
	out.Stuck, out.StuckSeen, out.StuckRetry = in.stuck(spec, rules)
	out.Sends = sends(d, in.BoostRaise)
	var short []fleet.PodInput
	out.Settled, short = settled(d, in.Pods)
	if spec.Mode() != v1alpha1.UpdateModeInPlaceOrRecreate {
		return &out, nil, nil
	}
	r := recreations{in: in, spec: spec, rules: rules, pods: short, asking: asking(out.Room.Asks)}
	steps, whole, err := r.steps(nil)
	if err != nil {
		return nil, nil, err
	}
	if !whole {
		return nil, &NodesWanted{decision: out, recreations: r}, nil
	}
	out.Recreate = steps
	return &out, nil, nil
}

// NodesWanted is a sync decided but for the recreation of its pods short
// of room, which needs every node with its pods (placement.Placeable).
type NodesWanted struct {
	decision    SyncDecision
	recreations recreations
}

// Decide is the whole decision of the sync, its recreations decided on
// nodes: every node with its pods (nil: there are none).
func (w *NodesWanted) Decide(nodes []placement.NodePods) (*SyncDecision, error) {
	if nodes == nil {
		nodes = []placement.NodePods{}
	}
	steps, _, err := w.recreations.steps(nodes)
	if err != nil {
		return nil, err
	}
	out := w.decision
	out.Recreate = steps
	return &out, nil
}

// sized is the input of the running pods' decision, and of the admission
// entry, with the bounds every part of the sync sizes within: a container
// whose policy sets no maxAllowed gets the namespace's LimitRange max, else
// the largest node's allocatable (maxAllowed says which it got). Where the
// input gives no memory limit ratios, they are the template's: what every
// part keeps a memory limit's ratio to, when the recommender advises the
// limit apart.
func (in SyncInput) sized() (policy fleet.PolicyInput, entry newpods.EntryInput, maxAllowed map[corev1.ResourceName]podchange.DefaultBound) {
	defaults := podchange.DefaultMaxAllowed(in.Rules, in.Largest)
	policy, entry = in.PolicyInput, in.NewPods
	policy.Spec, maxAllowed = podchange.BoundedSpec(in.Spec, defaults)
	if policy.LimitRatio == nil {
		policy.LimitRatio = podchange.MemoryLimitRatios(in.Template)
	}
	if entry.Spec != nil {
		entry.Spec, _ = podchange.BoundedSpec(entry.Spec, defaults)
	}
	return policy, entry, maxAllowed
}

// decidePolicy decides the running pods' resizes through the gates that
// hold lowerings back. The canary passes first: what it holds is no
// lowering for a budget to count, and the canary pods it picks wait for a
// window like any other. The gates settle on DecidePolicy's decision in the
// reverse order, so the budget counts the lowerings DecidePolicy sends and
// the canary's rollbacks go before them.
func (in SyncInput) decidePolicy(policy fleet.PolicyInput) (fleet.PolicyDecision, canary.Outcome, limits.Outcome, error) {
	var (
		canaryGate lowering.Gate[canary.Outcome] = canary.Gate{State: in.Canary, Answers: in.Guardrails}
		limitsGate lowering.Gate[limits.Outcome] = limits.Gate{Lowered: in.Lowered, Namespace: in.Namespace, CountLowerings: in.CountLowerings}
	)
	afterCanary, settleCanary, err := canaryGate.Pass(policy)
	if err != nil {
		return fleet.PolicyDecision{}, canary.Outcome{}, limits.Outcome{}, err
	}
	through, settleLimits, err := limitsGate.Pass(afterCanary)
	if err != nil {
		return fleet.PolicyDecision{}, canary.Outcome{}, limits.Outcome{}, err
	}
	d, err := fleet.DecidePolicy(through)
	if err != nil {
		return fleet.PolicyDecision{}, canary.Outcome{}, limits.Outcome{}, err
	}
	lo := settleLimits(&d)
	co := settleCanary(&d)
	return d, co, lo, nil
}

// admission is status.admission, planned from entry for new pods created
// after the resizes; nil when there is nothing to plan it from.
func admission(entry newpods.EntryInput, resizes []fleet.Action) *v1alpha1.Admission {
	if entry.Spec == nil {
		return nil
	}
	entry.Rules = chargedBy(entry.Rules, resizes)
	return newpods.PlanEntry(entry)
}

// stuck decides about the unschedulable pods tailor sized (DecideStuck),
// when the policy sizes new pods: each is replaced once it has stood
// Settle. It returns them, when each was first due (for the next sync),
// and when the next not yet due becomes so (0: none).
func (in SyncInput) stuck(spec *v1alpha1.TailorPolicySpec, rules *nsrules.Rules) ([]StuckStep, map[types.UID]time.Time, time.Duration) {
	if !newpods.ApplyOnCreate(spec) {
		return nil, nil, 0
	}
	seen := map[types.UID]time.Time{}
	if in.NewPodRoom == nil && spec.TargetRef == nil {
		return nil, seen, 0
	}
	// The template as the LimitRanger admits a pod of it: what the
	// waiting pods were created with before any entry, and what a
	// replacement is created with.
	template := in.Template
	if template != nil {
		template = newpods.AdmittedTemplate(rules, template)
	}
	stuck, retry := placement.DecideStuck(placement.StuckInput{Pods: in.Unbound, Template: template, Entry: in.Entry, Now: in.Now})
	var steps []StuckStep
	for _, s := range stuck {
		step := StuckStep{Stuck: s}
		if !s.Replace {
			// The entry comes down this sync; the pod goes on a later
			// one.
			retry = fleet.Soonest(retry, in.Settle)
			steps = append(steps, step)
			continue
		}
		first, ok := in.StuckSeen[s.Pod.UID]
		if !ok {
			first = in.Now
		}
		seen[s.Pod.UID] = first
		if wait := first.Add(in.Settle).Sub(in.Now); wait > 0 {
			retry = fleet.Soonest(retry, wait)
		} else {
			step.Due = true
		}
		steps = append(steps, step)
	}
	return steps, seen, retry
}

// sends are the resizes of d, each under its field manager.
func sends(d fleet.PolicyDecision, boostRaise map[types.UID]map[string]bool) []Send {
	var out []Send
	for _, a := range d.Resizes {
		s := Send{Action: a}
		if boost.Gives(a.Decision, boostRaise[a.Pod.UID]) {
			s.FieldManager = boost.FieldManager
		}
		out = append(out, s)
	}
	return out
}

// settled are the pods whose shortfall of room ended, and short those
// still short whose raise is not sent: what a recreation is decided for.
func settled(d fleet.PolicyDecision, pods []fleet.PodInput) (settled []Settled, short []fleet.PodInput) {
	held := map[string]bool{}
	for _, h := range d.Held {
		held[h.Pod.Name] = true
	}
	sending := map[string]bool{}
	for _, a := range d.Resizes {
		sending[a.Pod.Name] = true
	}
	for _, pin := range pods {
		p := pin.Pod
		dec := d.Decisions[p.Name]
		if len(dec.Short) == 0 {
			// A pod waiting its turn was not measured against its node's
			// room this sync: its shortfall, and the recreation it may
			// have led to, stand.
			if !held[p.Name] {
				settled = append(settled, Settled{Pod: p, DropEntry: dec.RetryAfter == 0})
			}
			continue
		}
		if !sending[p.Name] {
			short = append(short, pin)
		}
	}
	return settled, short
}

// recreations decide what is done about the pods short of room
// (DecideRecreate), within the sync's bounded spec and the quotas as its
// resizes leave them.
type recreations struct {
	in    SyncInput
	spec  *v1alpha1.TailorPolicySpec
	rules *nsrules.Rules
	pods  []fleet.PodInput
	// asking are the pods room is asked for in place this sync, by UID,
	// each with what was asked (RoomAsk.Text).
	asking map[types.UID]string
}

// steps decides each pod's step in turn, on nodes: at most one eviction
// per minResizeInterval, this sync's counted. whole is false when a pod
// needs every node and nodes is nil.
func (r recreations) steps(nodes []placement.NodePods) (steps []RecreateStepOf, whole bool, err error) {
	last := r.in.Recreation.LastEviction
	for _, pin := range r.pods {
		step, err := r.step(pin, last, nodes)
		if err != nil {
			return nil, false, err
		}
		switch step.Step {
		case placement.RecreateNeedNodes:
			return nil, false, nil
		case placement.RecreateEvict:
			// One eviction per minResizeInterval: the next pod waits.
			last = r.in.Now
		}
		steps = append(steps, step)
	}
	return steps, true, nil
}

// step decides what is done about one pod short of room.
func (r recreations) step(pin fleet.PodInput, lastEviction time.Time, nodes []placement.NodePods) (RecreateStepOf, error) {
	in, rs, p := r.in, r.in.Recreation, pin.Pod
	since, ok := rs.ShortSince[p.UID]
	if !ok || since.IsZero() {
		since = in.Now
	}
	if text, ok := r.asking[p.UID]; ok {
		// Room made in place comes first: the pod waits for it, its run
		// of shortfall counted, until the existing path may go on.
		if wait := since.Add(max(rs.RecreateAfter, room.Patience)).Sub(in.Now); wait > 0 {
			return RecreateStepOf{Pod: p, ShortSince: since, RecreateDecision: placement.RecreateDecision{
				Step: placement.RecreateWait, RetryAfter: min(wait, room.Retry), Reason: RecreateWaitRoom, Message: "pod " + p.Name + ": " + text}}, nil
		}
	}
	block := rs.Blocked[p.UID]
	rin := placement.RecreateInput{
		Pod: pin, Spec: r.spec, Server: in.Server, MemoryFloorHeadroom: in.MemoryFloorHeadroom,
		ShortSince: since, RecreateAfter: rs.RecreateAfter, LastEviction: lastEviction,
		BlockedUntil: block.Until, BlockedReason: block.Reason, BlockedMessage: block.Message,
		Settle: in.Settle, Now: in.Now, Holds: in.Holds, Rules: r.rules,
		Template: rs.Template, Generation: rs.Generation, Nodes: nodes,
	}
	if owner := metav1.GetControllerOf(p); owner != nil {
		if rc, ok := rs.Entries[owner.UID]; ok {
			rin.Entry = &rc
		}
	}
	d, err := placement.DecideRecreate(rin)
	if err != nil {
		return RecreateStepOf{}, fmt.Errorf("deciding recreation of pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return RecreateStepOf{Pod: p, ShortSince: since, RecreateDecision: d}, nil
}

// chargedBy is rules with the quotas charged for the resizes, as the
// apiserver charges each when it takes it (DecidePolicy judges each against
// what those before it leave); nil when rules is.
func chargedBy(rules *nsrules.Rules, resizes []fleet.Action) *nsrules.Rules {
	if rules == nil || len(rules.Quotas) == 0 {
		return rules
	}
	for _, a := range resizes {
		charged := rules.Charged(rules.Admitted(a.Plan.AfterPod()), a.Pod, 1)
		rules = &charged
	}
	return rules
}

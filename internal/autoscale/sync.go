package autoscale

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/newpods"
	"github.com/tailorhq/tailor/internal/autoscale/placement"
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
	Canary CanaryState
	// Guardrails are the answers of the canary's query guardrails, by
	// name, asked for LiveCanaryPods this sync; a guardrail missing here
	// was not asked, and is unanswered.
	Guardrails map[string]GuardrailAnswer
	// Lowered are the pods the lowering budget counted, as the last sync
	// left them (restored from the checkpoint after a restart).
	Lowered Lowered
	// Namespace is what a namespace budget (budget.namespacePods) is
	// judged by; the zero value when the policy sets none.
	Namespace NamespaceLowerings
	// CountLowerings: some policy of the namespace has a namespace budget,
	// which counts this policy's lowerings, so Limits.Lowered keeps them
	// even when the policy has no budget of its own.
	CountLowerings bool
	// Largest is the largest node's allocatable (LargestAllocatable): the
	// maxAllowed of a container whose policy sets none, where no
	// LimitRange of Rules gives a max (DefaultMaxAllowed).
	Largest map[corev1.ResourceName]podchange.DefaultBound
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
	// Nodes are every node with its pods; nil until a decision asks for
	// them (SyncDecision.NeedNodes), since listing them costs.
	Nodes []placement.NodePods
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
	// NeedNodes: a recreation needs every node with its pods; decide
	// again with Recreation.Nodes.
	NeedNodes bool
	// Settled are the pods no longer short of their node's room (and not
	// waiting their turn): their run of shortfall ends.
	Settled []Settled
	// Canary is what the policy's canary did, and its state for the next
	// sync; its rollbacks are the first Sends.
	Canary CanaryOutcome
	// Limits is what the change windows and the lowering budget held, and
	// the budget's state for the next sync.
	Limits LimitsOutcome
	// DefaultMaxAllowed are the bounds the sync gave the containers whose
	// policy sets no maxAllowed (BoundedSpec), by resource.
	DefaultMaxAllowed map[corev1.ResourceName]podchange.DefaultBound
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

// DecideSync decides one whole sync of a policy: the running pods' resizes
// and holds (DecidePolicy, with the lowerings a canary, a closed change
// window or a spent budget holds taken out, and the canary's rollbacks
// first), the field manager each resize goes under, the
// unschedulable pods to replace (DecideStuck, each due once it has stood
// Settle), and which pods short of room may be recreated or have settled.
func DecideSync(in SyncInput) (SyncDecision, error) {
	if in.Spec == nil {
		return SyncDecision{}, fmt.Errorf("decide sync: the policy spec is required")
	}
	// The bounds every part of the sync sizes within: a container whose
	// policy sets no maxAllowed gets the namespace's LimitRange max, else
	// the largest node's allocatable.
	defaults := podchange.DefaultMaxAllowed(in.Rules, in.Largest)
	var bounded map[corev1.ResourceName]podchange.DefaultBound
	in.Spec, bounded = podchange.BoundedSpec(in.Spec, defaults)
	if in.NewPods.Spec != nil {
		in.NewPods.Spec, _ = podchange.BoundedSpec(in.NewPods.Spec, defaults)
	}
	spec, now := in.Spec, in.Now
	mode := spec.Mode()
	cfg, canary := CanaryConfigOf(spec)
	if in.LimitRatio == nil {
		// The template every part of the sync keeps a memory limit's
		// ratio to, when the recommender advises the limit apart.
		in.LimitRatio = podchange.MemoryLimitRatios(in.Template)
	}
	pin := in.PolicyInput
	var plan *canaryPlan
	if canary && mode != v1alpha1.UpdateModeOff {
		var err error
		if plan, err = planCanary(in.PolicyInput, in.Canary, cfg, in.Guardrails); err != nil {
			return SyncDecision{}, err
		}
		pin = plan.input
	}
	lim, limited, err := LoweringLimitsOf(spec)
	if err != nil {
		return SyncDecision{}, err
	}
	var limits *limitPlan
	if limited && mode != v1alpha1.UpdateModeOff {
		// After the canary: what it holds is no lowering to count, and
		// the canary pods it picks wait for a window like any other.
		if limits, err = planLimits(pin, in.Lowered, in.Namespace, lim); err != nil {
			return SyncDecision{}, err
		}
		pin = limits.input
	}
	d, err := fleet.DecidePolicy(pin)
	if err != nil {
		return SyncDecision{}, err
	}
	var lo LimitsOutcome
	switch {
	case limits != nil:
		lo = limits.settle(&d)
	case limited:
		lo = LimitsOutcome{Active: true, Lowered: in.Lowered.Within(now), Status: metav1.ConditionFalse, Reason: v1alpha1.LoweringsReasonAllowed,
			Message: "updateMode is Off: nothing is lowered, so nothing waits for a change window or the budget"}
	case in.CountLowerings && mode != v1alpha1.UpdateModeOff:
		// Another policy's namespace budget counts what this one lowers;
		// nothing holds it.
		lo = LimitsOutcome{Lowered: in.Lowered.Within(now)}
		countSent(lo.Lowered, &d, pin.Pods, now)
	}
	var co CanaryOutcome
	switch {
	case plan != nil:
		co = plan.settle(&d)
	case canary:
		// Mode Off changes no pod: the canary stands where it was.
		co = CanaryOutcome{Active: true, State: in.Canary, Status: metav1.ConditionFalse, Reason: v1alpha1.CanaryReasonIdle,
			Message: "updateMode is Off: nothing is lowered, so no canary runs"}
	}
	out := SyncDecision{PolicyDecision: d, Canary: co, Limits: lo, DefaultMaxAllowed: bounded}
	// New pods and replacements are created after this sync's resizes,
	// which the apiserver charges to the quotas as it takes them.
	in.Rules = chargedBy(in.Rules, d.Resizes)
	if in.NewPods.Spec != nil {
		entry := in.NewPods
		entry.Rules = chargedBy(entry.Rules, d.Resizes)
		out.Admission = newpods.PlanEntry(entry)
	}
	if mode == v1alpha1.UpdateModeOff {
		return out, nil
	}
	if newpods.ApplyOnCreate(spec) {
		out.StuckSeen = map[types.UID]time.Time{}
		if in.NewPodRoom != nil || spec.TargetRef != nil {
			// The template as the LimitRanger admits a pod of it: what the
			// waiting pods were created with before any entry, and what a
			// replacement is created with.
			template := in.Template
			if template != nil {
				template = newpods.AdmittedTemplate(in.Rules, template)
			}
			stuck, retry := placement.DecideStuck(placement.StuckInput{Pods: in.Unbound, Template: template, Entry: in.Entry, Now: now})
			for _, s := range stuck {
				step := StuckStep{Stuck: s}
				if !s.Replace {
					// The entry comes down this sync; the pod goes on a
					// later one.
					retry = fleet.Soonest(retry, in.Settle)
					out.Stuck = append(out.Stuck, step)
					continue
				}
				first, ok := in.StuckSeen[s.Pod.UID]
				if !ok {
					first = now
				}
				out.StuckSeen[s.Pod.UID] = first
				if wait := first.Add(in.Settle).Sub(now); wait > 0 {
					retry = fleet.Soonest(retry, wait)
				} else {
					step.Due = true
				}
				out.Stuck = append(out.Stuck, step)
			}
			out.StuckRetry = retry
		}
	}
	held := map[string]bool{}
	for _, h := range d.Held {
		held[h.Pod.Name] = true
	}
	sending := map[string]bool{}
	for _, a := range d.Resizes {
		sending[a.Pod.Name] = true
		s := Send{Action: a}
		if boost.Gives(a.Decision, in.BoostRaise[a.Pod.UID]) {
			s.FieldManager = boost.FieldManager
		}
		out.Sends = append(out.Sends, s)
	}
	for _, pin := range in.Pods {
		p := pin.Pod
		dec := d.Decisions[p.Name]
		if len(dec.Short) == 0 {
			// A pod waiting its turn was not measured against its node's
			// room this sync: its shortfall, and the recreation it may
			// have led to, stand.
			if !held[p.Name] {
				out.Settled = append(out.Settled, Settled{Pod: p, DropEntry: dec.RetryAfter == 0})
			}
			continue
		}
		if mode == v1alpha1.UpdateModeInPlaceOrRecreate && !sending[p.Name] {
			step, err := in.recreate(pin)
			if err != nil {
				return out, err
			}
			if step.Step == placement.RecreateNeedNodes {
				out.NeedNodes = true
				return out, nil
			}
			if step.Step == placement.RecreateEvict {
				// One eviction per minResizeInterval: the next pod waits.
				in.Recreation.LastEviction = now
			}
			out.Recreate = append(out.Recreate, step)
		}
	}
	return out, nil
}

// recreate decides what is done about a pod short of room (DecideRecreate).
func (in SyncInput) recreate(pin fleet.PodInput) (RecreateStepOf, error) {
	rs, p := in.Recreation, pin.Pod
	since, ok := rs.ShortSince[p.UID]
	if !ok || since.IsZero() {
		since = in.Now
	}
	block := rs.Blocked[p.UID]
	rin := placement.RecreateInput{
		Pod: pin, Spec: in.Spec, Server: in.Server, MemoryFloorHeadroom: in.MemoryFloorHeadroom,
		ShortSince: since, RecreateAfter: rs.RecreateAfter, LastEviction: rs.LastEviction,
		BlockedUntil: block.Until, BlockedReason: block.Reason, BlockedMessage: block.Message,
		Settle: in.Settle, Now: in.Now, Holds: in.Holds, Rules: in.Rules,
		Template: rs.Template, Generation: rs.Generation, Nodes: rs.Nodes,
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

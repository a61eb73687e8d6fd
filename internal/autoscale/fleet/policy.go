package fleet

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	schedhelper "k8s.io/component-helpers/scheduling/corev1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/jvm"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/ownership"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/preemption"
	"github.com/tailorhq/tailor/internal/resize"
)

// PodInput is what DecidePolicy knows about one pod of the policy.
type PodInput struct {
	Pod       *corev1.Pod
	Targets   map[string]podchange.Target
	PodTarget podchange.Target
	// Early are the targets with the lowerings only the scale-down
	// stabilization window holds back given (advise.Advice.Early): what
	// room made for a pod of higher priority lowers this one to
	// (internal/autoscale/room). DecidePolicy itself never reads them.
	Early      map[string]podchange.Target
	WorkingSet map[string]resource.Quantity
	// JVM is each container's JVM as the node agent measured it.
	JVM map[string]jvm.Measured
	// LastResize is when the pod was last resized (zero: never).
	LastResize time.Time
	// InFlight is true while a resize of the pod is not finished: the
	// kubelet has not seen it, is applying it, or has deferred it.
	InFlight bool
	// ResizeRefused is what the kubelet said when it would not apply the
	// pod's last resize (Infeasible, or an error applying it); "" when it
	// did or still may. A canary whose lowering was refused never ran at
	// the lowered values, so it proves nothing.
	ResizeRefused string
	// RaiseSince is when the evidence for a pending raise was first seen;
	// the oldest is served first.
	RaiseSince time.Time
	// Boost names the containers whose cpu target is a startup boost
	// applied or removed (Input.Boost).
	Boost map[string]bool
	// Throttled is each container's share of CFS periods throttled,
	// measured wholly after the pod's last resize; a container the source
	// has no such figure for is missing. A canary's guardrail reads it.
	Throttled map[string]float64
	// Preempt: the pod's raise may be sent beyond its node's free room,
	// up to what the pods of lower priority there hold, where the
	// scheduler would preempt them for it (behavior.scaleUp.preemption,
	// allowed by the manager, and no room could be made in place).
	Preempt bool
	// Deferred is since when the kubelet has deferred a resize tailor
	// sent the pod (its PodResizePending condition); zero when none is.
	Deferred time.Time
}

// PreemptionPatience is how long a raise sent for the scheduler to preempt
// for may stay deferred before it is cut back to what the pod has: the
// scheduler preempts within seconds of the kubelet's deferral when it
// does at all, and a deferred resize counts against the node for every
// pod the scheduler places meanwhile.
const PreemptionPatience = time.Minute

// PreemptionBackoff is how long a pod whose raise, sent for the scheduler
// to preempt for, was taken back waits before another is sent: the
// scheduler did not preempt for the first (its feature gate may be off),
// and would not for one sent at once.
const PreemptionBackoff = 10 * time.Minute

// PolicyInput is everything one sync of a policy decides on; the controller
// gathers it from its cache and the metrics source.
type PolicyInput struct {
	Spec *v1alpha1.TailorPolicySpec
	Pods []PodInput
	// Nodes are the nodes of the pods, by name, with every pod bound to
	// them. A pod whose node is missing is held: its room is unknown.
	Nodes               map[string]*resize.NodeState
	Server              resize.Version
	MemoryFloorHeadroom float64
	Now                 time.Time
	// Holds are the requests HorizontalPodAutoscalers of the workload
	// divide usage by (ownership.HPAHolds).
	Holds ownership.Holds
	// Rules are the namespace's LimitRanges and ResourceQuotas: values are
	// clamped into the LimitRanges, raises cut to what the quotas have
	// left (shared between the pods of the sync, as a node's room is), and
	// a resize the apiserver would still refuse for them is held. Nil: none.
	Rules *nsrules.Rules
	// LimitRatio is each container's memory limit over its request in the
	// workload's template (Input.LimitRatio); nil when no template is
	// known.
	LimitRatio map[string]float64
}

// Action is a resize to send now.
type Action struct {
	Pod      *corev1.Pod
	Decision podchange.Decision
	Plan     *resize.Result
	// Preemption is, for a raise sent beyond the node's free room, whom
	// the scheduler is expected to preempt for it; nil for any other.
	Preemption *preemption.Outcome
	// CutBack: the action takes back a raise sent for the scheduler to
	// preempt for that stayed deferred past PreemptionPatience, to what
	// the kubelet runs the pod with.
	CutBack bool
}

// HoldReason says why a pod that needs a change gets none now.
type HoldReason string

const (
	// HoldInFlight: the pod's last resize has not finished.
	HoldInFlight HoldReason = "InFlight"
	// HoldMaxConcurrent: maxConcurrentResizes are in flight.
	HoldMaxConcurrent HoldReason = "MaxConcurrentResizes"
	// HoldNodeUnknown: the pod's node is not known, so neither is its room.
	HoldNodeUnknown HoldReason = "NodeUnknown"
	// HoldRefused: the planner predicts Kubernetes would refuse the change.
	HoldRefused HoldReason = "Refused"
	// HoldNoRoom: the planner predicts the kubelet would defer it.
	HoldNoRoom HoldReason = "NodeFull"
	// HoldNamespaceRules: a LimitRange or ResourceQuota of the namespace
	// would refuse it.
	HoldNamespaceRules HoldReason = "NamespaceRules"
)

// Held is a pod that wants a change that is not sent now.
type Held struct {
	Pod      *corev1.Pod
	Reason   HoldReason
	Message  string
	Decision podchange.Decision
	// Rule is the planner's rule for HoldRefused.
	Rule resize.Rule
}

// PolicyDecision is every action of one sync, and everything held back.
type PolicyDecision struct {
	// Resizes are to be sent now, in order.
	Resizes []Action
	// Held are pods whose change waits, and why.
	Held []Held
	// Decisions are every pod's own decision by name, for reporting what
	// was skipped and what the node's room cut.
	Decisions map[string]podchange.Decision
	// RetryAfter is when a pod now held for time becomes due; 0: none.
	RetryAfter time.Duration
}

// DefaultMaxConcurrentResizes is maxConcurrentResizes when unset.
const DefaultMaxConcurrentResizes = 1

// MaxConcurrentResizes is the policy's maxConcurrentResizes, or the default.
func MaxConcurrentResizes(spec *v1alpha1.TailorPolicySpec) int {
	if b := spec.Behavior; b != nil && b.MaxConcurrentResizes != nil {
		return int(*b.MaxConcurrentResizes)
	}
	return DefaultMaxConcurrentResizes
}

// DecidePolicy decides one sync of a policy over all its pods at once. Each
// pod's change is shaped by Decide; then, raises before lowerings and each
// group longest-waiting first, as many pods as maxConcurrentResizes leaves
// room for get their change, cut to their node's room as it stands after the
// raises already chosen on that node, and checked by the resize planner. A
// pod not served keeps its place: nothing in its state moved, so it is first
// in line once a slot frees.
func DecidePolicy(in PolicyInput) (PolicyDecision, error) {
	out := PolicyDecision{Decisions: map[string]podchange.Decision{}}
	if in.Spec == nil {
		return out, fmt.Errorf("decide policy: the policy spec is required")
	}
	inFlight := 0
	for _, p := range in.Pods {
		if p.InFlight {
			inFlight++
		}
	}
	slots := MaxConcurrentResizes(in.Spec) - inFlight

	// First pass: each pod's wish, without the node's room.
	type candidate struct {
		PodInput
		wish podchange.Decision
	}
	var queue []candidate
	for _, p := range in.Pods {
		// A raise deferred past its patience is taken back whatever the
		// pod's wish, which the deferred spec already holds.
		if p.InFlight {
			a, ok, err := in.cutBack(p)
			if err != nil {
				return out, err
			}
			if ok {
				out.Decisions[p.Pod.Name] = a.Decision
				out.Resizes = append(out.Resizes, a)
				continue
			}
		}
		d, err := in.Wish(p)
		if err != nil {
			return out, err
		}
		out.Decisions[p.Pod.Name] = d
		if d.RetryAfter > 0 && (out.RetryAfter == 0 || d.RetryAfter < out.RetryAfter) {
			out.RetryAfter = d.RetryAfter
		}
		if d.Empty() {
			continue
		}
		if p.InFlight {
			out.Held = append(out.Held, Held{Pod: p.Pod, Reason: HoldInFlight, Decision: d,
				Message: "the pod's last resize has not finished"})
			continue
		}
		queue = append(queue, candidate{PodInput: p, wish: d})
	}
	sort.SliceStable(queue, func(i, j int) bool {
		a, b := queue[i], queue[j]
		if ra, rb := a.wish.Raises(), b.wish.Raises(); ra != rb {
			return ra
		}
		ta, tb := a.LastResize, b.LastResize
		if a.wish.Raises() {
			ta, tb = a.RaiseSince, b.RaiseSince
		}
		if !ta.Equal(tb) {
			return ta.Before(tb)
		}
		return a.Pod.Name < b.Pod.Name
	})

	rooms := map[string]corev1.ResourceList{}
	rules := in.Rules
	for _, c := range queue {
		if slots <= 0 {
			out.Held = append(out.Held, Held{Pod: c.Pod, Reason: HoldMaxConcurrent, Decision: c.wish,
				Message: fmt.Sprintf("%d resize(s) in flight (maxConcurrentResizes %d)", MaxConcurrentResizes(in.Spec)-slots, MaxConcurrentResizes(in.Spec))})
			continue
		}
		node, known := in.Nodes[c.Pod.Spec.NodeName]
		if !known || node == nil {
			out.Held = append(out.Held, Held{Pod: c.Pod, Reason: HoldNodeUnknown, Decision: c.wish,
				Message: fmt.Sprintf("node %q of the pod is not known: its room cannot be counted", c.Pod.Spec.NodeName)})
			continue
		}
		room, ok := rooms[c.Pod.Spec.NodeName]
		if !ok {
			// Every pod on a node sees the same free room: allocatable
			// less what all of them request.
			room, _ = resize.Room(c.Pod, node)
		}
		given := withQuotaRoom(room, rules, c.Pod)
		if c.Preempt {
			given = withQuotaRoom(preemptible(room, c.Pod, node), rules, c.Pod)
		}
		pin := in.podInput(c.PodInput, given)
		pin.Rules = rules
		d, err := podchange.Decide(pin)
		if err != nil {
			return out, err
		}
		out.Decisions[c.Pod.Name] = d
		if d.Empty() {
			continue
		}
		plan, err := resize.Plan(resize.Input{Pod: c.Pod, Desired: d.Desired, Node: node, Server: in.Server, Rules: rules})
		if err != nil {
			return out, fmt.Errorf("planning resize of pod %s/%s: %w", c.Pod.Namespace, c.Pod.Name, err)
		}
		switch {
		case plan.NoChange:
			continue
		case plan.ByNamespaceRules():
			out.Held = append(out.Held, Held{Pod: c.Pod, Reason: HoldNamespaceRules, Rule: plan.Rule, Decision: d,
				Message: fmt.Sprintf("the apiserver would refuse it (rule %s): %s", plan.Rule, plan.Message)})
			continue
		case plan.Outcome == resize.Refused:
			out.Held = append(out.Held, Held{Pod: c.Pod, Reason: HoldRefused, Rule: plan.Rule, Decision: d,
				Message: fmt.Sprintf("Kubernetes would refuse it (rule %s): %s", plan.Rule, plan.Message)})
			continue
		case len(plan.RestartsForDefaults()) > 0:
			out.Held = append(out.Held, Held{Pod: c.Pod, Reason: HoldNamespaceRules, Decision: d,
				Message: fmt.Sprintf("the namespace's LimitRanges add to it (%s), which restarts %s: a restart the policy did not choose",
					plan.Defaulted, strings.Join(plan.RestartsForDefaults(), ", "))})
			continue
		case plan.RequestsForDefaults():
			out.Held = append(out.Held, Held{Pod: c.Pod, Reason: HoldNamespaceRules, Decision: d,
				Message: fmt.Sprintf("the namespace's LimitRanges add requests to it (%s), which the node's room was not counted for: the pod is resized once it is created with them",
					plan.Defaulted)})
			continue
		case plan.Predicted == resize.Deferred && c.Preempt:
			o := preemption.Predict(preemption.Input{Pod: plan.AfterPod(), Node: node.Node(), Pods: node.Pods, Now: in.Now})
			if o.Reason != preemption.Preempts {
				out.Held = append(out.Held, Held{Pod: c.Pod, Reason: HoldNoRoom, Decision: d,
					Message: "the node has no room now, and " + o.Message})
				continue
			}
			// Sent for the scheduler to make the room: nothing else on
			// the node is raised in this sync.
			rooms[c.Pod.Spec.NodeName] = corev1.ResourceList{}
			out.Resizes = append(out.Resizes, Action{Pod: c.Pod, Decision: d, Plan: plan, Preemption: &o})
			slots--
			continue
		case plan.Predicted == resize.Deferred || plan.Predicted == resize.Infeasible:
			out.Held = append(out.Held, Held{Pod: c.Pod, Reason: HoldNoRoom, Decision: d,
				Message: fmt.Sprintf("the node has no room now (kubelet would answer %s)", plan.Predicted)})
			continue
		}
		if rules != nil {
			// The plan judged the resize against the rules, the LimitRanger's
			// defaults in; what it adds is charged for the next.
			charged := rules.Charged(plan.AdmittedPod(), c.Pod, 1)
			rules = &charged
		}
		if d.RoomLeft != nil {
			rooms[c.Pod.Spec.NodeName] = roomLeft(room, given, d.RoomLeft)
		}
		out.Resizes = append(out.Resizes, Action{Pod: c.Pod, Decision: d, Plan: plan})
		slots--
	}
	return out, nil
}

// Wish is the pod's own decision, before its node's room and the quotas
// cut it: what DecidePolicy's first pass queues it with, and what the gates
// holding lowerings back tell its lowerings apart by.
func (in PolicyInput) Wish(p PodInput) (podchange.Decision, error) {
	return podchange.Decide(in.podInput(p, nil))
}

func (in PolicyInput) podInput(p PodInput, room corev1.ResourceList) podchange.Input {
	return podchange.Input{
		Pod: p.Pod, Spec: in.Spec, Targets: p.Targets, PodTarget: p.PodTarget, WorkingSet: p.WorkingSet, JVM: p.JVM,
		MemoryFloorHeadroom: in.MemoryFloorHeadroom, Room: room, LastResize: p.LastResize, Now: in.Now, Holds: in.Holds, Boost: p.Boost,
		LimitRatio: in.LimitRatio,
	}
}

// withQuotaRoom is room cut to what the quotas taking p in have left for
// its requests.
func withQuotaRoom(room corev1.ResourceList, rules *nsrules.Rules, p *corev1.Pod) corev1.ResourceList {
	if rules == nil {
		return room
	}
	return resize.LeastRoom(room, rules.RequestRoom(p))
}

// preemptible is room with what the pods of lower priority than p on node
// request added: the most the scheduler's preemption could free for p.
func preemptible(room corev1.ResourceList, p *corev1.Pod, node *resize.NodeState) corev1.ResourceList {
	out := room.DeepCopy()
	prio := schedhelper.PodPriority(p)
	for _, o := range node.Pods {
		if (o.UID == p.UID && o.Namespace == p.Namespace && o.Name == p.Name) || o.Status.Phase == corev1.PodSucceeded || o.Status.Phase == corev1.PodFailed || schedhelper.PodPriority(o) >= prio {
			continue
		}
		req := resize.NodeRequests(o)
		for r, q := range out {
			q.Add(req[r])
			out[r] = q
		}
	}
	return out
}

// cutBack is the resize that takes back a raise of p sent for the
// scheduler to preempt for, deferred for PreemptionPatience or longer: the
// pod's containers set to what the kubelet runs them with. ok is false
// for any other pod in flight, which waits.
func (in PolicyInput) cutBack(p PodInput) (Action, bool, error) {
	if !in.Spec.Preempts() || p.Deferred.IsZero() || in.Now.Sub(p.Deferred) < PreemptionPatience {
		return Action{}, false, nil
	}
	want := resize.Desired{Containers: map[string]corev1.ResourceRequirements{}}
	var changes []podchange.Change
	spec := map[string]corev1.ResourceRequirements{}
	for _, c := range append(append([]corev1.Container(nil), p.Pod.Spec.Containers...), p.Pod.Spec.InitContainers...) {
		spec[c.Name] = c.Resources
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Pod.Status.ContainerStatuses...), p.Pod.Status.InitContainerStatuses...) {
		has, ok := spec[cs.Name]
		if cs.Resources == nil || !ok {
			continue
		}
		rr := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			runs, ok := cs.Resources.Requests[r]
			if !ok {
				continue
			}
			rr.Requests[r] = runs
			ch := podchange.Change{Container: cs.Name, Resource: r, RequestBefore: has.Requests[r], RequestNow: runs,
				Notes: []string{fmt.Sprintf("deferred for the scheduler to preempt for since %s, over %s: taken back", p.Deferred.UTC().Format(time.RFC3339), PreemptionPatience)}}
			if q, ok := cs.Resources.Limits[r]; ok {
				rr.Limits[r] = q
				before := has.Limits[r]
				ch.LimitBefore, ch.LimitNow = &before, &q
			}
			if ch.RequestNow.Cmp(ch.RequestBefore) != 0 || (ch.LimitNow != nil && ch.LimitNow.Cmp(*ch.LimitBefore) != 0) {
				changes = append(changes, ch)
			}
		}
		want.Containers[cs.Name] = rr
	}
	plan, err := resize.Plan(resize.Input{Pod: p.Pod, Desired: want, Server: in.Server, Rules: in.Rules})
	if err != nil {
		return Action{}, false, fmt.Errorf("planning the cut back of pod %s/%s: %w", p.Pod.Namespace, p.Pod.Name, err)
	}
	if plan.NoChange || plan.Outcome == resize.Refused {
		return Action{}, false, nil
	}
	return Action{Pod: p.Pod, Decision: podchange.Decision{Desired: want, Changes: changes}, Plan: plan, CutBack: true}, true, nil
}

// roomLeft is the node's room after a decision that was given given and
// left left: what the decision took, taken from room.
func roomLeft(room, given, left corev1.ResourceList) corev1.ResourceList {
	out := room.DeepCopy()
	for r, q := range out {
		took := given[r].DeepCopy()
		took.Sub(left[r])
		q.Sub(took)
		out[r] = q
	}
	return out
}

// Soonest is the sooner of two waits, 0 being none: how the parts of a
// sync join the RetryAfter each asks for.
func Soonest(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

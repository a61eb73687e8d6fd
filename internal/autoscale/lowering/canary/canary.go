package canary

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/lowering"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/resize"
)

// Values are cpu and memory requests and limits by container name,
// podcontainers.PodLevelName standing for the pod-level resources.
type Values map[string]corev1.ResourceRequirements

// Pod is a pod lowered before the others, and what its guardrails are
// judged against.
type Pod struct {
	UID  types.UID
	Name string
	// LoweredAt is when its lowering was sent: the window starts then.
	LoweredAt time.Time
	// Ready: the pod was Ready when it was lowered.
	Ready bool
	// Before are its values before the lowering, which a rollback restores.
	Before Values
	// Restarts are its containers' restart counts when it was lowered.
	Restarts map[string]int32
}

// State is what a policy's canary remembers from one sync to the
// next, and across manager restarts (the controller keeps it in the
// policy's TailorCheckpoint).
type State struct {
	// Pods are the canary pods being watched; none between canaries.
	Pods []Pod
	// Revert are canary pods rolled back whose spec did not show it yet:
	// their rollback is sent again until it does.
	Revert []Pod
	// Proven are the values the last promoted canary held through its
	// window, raised by a rollback to what the canary pods had before:
	// lowerings to them or above need no canary, and new pods are not
	// sized below them.
	Proven Values
	// HoldUntil is when the hold after the last rollback ends.
	HoldUntil time.Time
	// Trips counts rollbacks since the last promotion.
	Trips int32
	// LastResult is how the last canary ended (a Canary condition reason:
	// Promoted or RolledBack), and Learnt what it showed.
	LastResult, Learnt string
}

// IsZero reports whether the canary remembers nothing.
func (s State) IsZero() bool {
	return len(s.Pods) == 0 && len(s.Revert) == 0 && len(s.Proven) == 0 &&
		s.HoldUntil.IsZero() && s.Trips == 0 && s.LastResult == "" && s.Learnt == ""
}

// Guardrail names a built-in guardrail of a canary.
type Guardrail string

const (
	GuardrailOOMKill         Guardrail = "OOMKill"
	GuardrailRestart         Guardrail = "Restart"
	GuardrailReadiness       Guardrail = "Readiness"
	GuardrailCPUThrottling   Guardrail = "CPUThrottling"
	GuardrailMemoryNearLimit Guardrail = "MemoryNearLimit"
	// GuardrailResizeRefused is no guardrail a policy turns off: the
	// kubelet would not apply a canary pod's lowering (Infeasible, or an
	// error), so it never ran at the lowered values and could prove
	// nothing; it is taken back and held as a trip is, rather than
	// promoted after its window on values it never had.
	GuardrailResizeRefused Guardrail = "ResizeRefused"
	// GuardrailQuery is every query guardrail (canary.guardrails.queries):
	// the policy names each, and its events and condition say which one.
	GuardrailQuery Guardrail = "Query"
)

// QueryGuardrail is a custom guardrail of a canary, a PromQL query
// (canary.guardrails.queries) with its threshold read: it trips when the
// canary pods' value is past a bound, the threshold or the siblings' value
// moved by Percent.
type QueryGuardrail struct {
	Name string
	// Below: it trips below the bound; otherwise above it.
	Below bool
	// Relative: the bound is the same query's value for the workload's
	// other pods, Percent (of its magnitude) above or below it; otherwise
	// it is Threshold.
	Relative  bool
	Threshold float64
	Percent   float64
}

// QueryAnswer is a query guardrail's query as Prometheus answered it for
// some pods: its one value, or why there is none.
type QueryAnswer struct {
	Value float64
	// Missing says why there is no value (Prometheus unreachable or
	// refusing, no series or several, NaN, no pods to ask about); "" when
	// Value is the answer.
	Missing string
}

// GuardrailAnswer is what a query guardrail's query answered this sync for
// the canary pods and, for a relative guardrail, for the workload's other
// pods.
type GuardrailAnswer struct {
	Canary, Siblings QueryAnswer
}

// Reasons of the events a canary sends.
const (
	EventStarted    = "CanaryStarted"
	EventPromoted   = "CanaryPromoted"
	EventRolledBack = "CanaryRolledBack"
)

// HoldReasons of the lowerings a canary holds.
const (
	// Hold: the lowering waits for the canary pods' window.
	Hold fleet.HoldReason = "Canary"
	// HoldBackoff: a canary was rolled back; the workload's
	// lowerings wait out the backoff.
	HoldBackoff fleet.HoldReason = "CanaryBackoff"
)

// Event is something a canary did this sync, for an event.
type Event struct {
	// Reason is one of the EventCanary reasons.
	Reason string
	// Pod is the pod it is about; nil for the policy as a whole.
	Pod *corev1.Pod
	// Guardrail is the one that tripped, for EventRolledBack.
	Guardrail Guardrail
	Message   string
}

// Outcome is the canary's part of a sync's decision.
type Outcome struct {
	// Active: the policy has a canary, and a Canary condition.
	Active bool
	// State is the canary's state for the next sync.
	State  State
	Events []Event
	// Status, Reason and Message are the Canary condition's, when Active.
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// Config is behavior.scaleDown.canary with its defaults.
type Config struct {
	// Pods is the count of canary pods, or Percent the share of the
	// workload's pods (Pods is then 0).
	Pods, Percent int
	Window        time.Duration
	// Which guardrails are watched, and their thresholds: the throttled
	// share of CFS periods above which CPUThrottling trips, and the share
	// of a memory limit within which MemoryNearLimit does.
	OOMKill, Restart, Readiness, CPUThrottling, MemoryNearLimit bool
	ThrottledShare, MemoryMargin                                float64
	BackoffInitial, BackoffMax                                  time.Duration
	// Queries are the custom guardrails, in the policy's order.
	Queries []QueryGuardrail
}

// Defaults of a canary's fields, as the CRD sets them.
const (
	DefaultWindow         = 10 * time.Minute
	DefaultThrottled      = 20
	DefaultMemoryMargin   = 5
	DefaultBackoffInitial = time.Hour
	DefaultBackoffMax     = 24 * time.Hour
	// MaxPods bounds a canary, as the CRD and the checkpoint do.
	MaxPods = 100
)

// ConfigOf is the policy's canary with its defaults; false when it
// has none.
func ConfigOf(spec *v1alpha1.TailorPolicySpec) (Config, bool) {
	if spec.Behavior == nil || spec.Behavior.ScaleDown == nil || spec.Behavior.ScaleDown.Canary == nil {
		return Config{}, false
	}
	c := spec.Behavior.ScaleDown.Canary
	cfg := Config{
		Pods: 1, Window: DefaultWindow,
		OOMKill: true, Restart: true, Readiness: true, CPUThrottling: true, MemoryNearLimit: true,
		ThrottledShare: DefaultThrottled / 100.0, MemoryMargin: DefaultMemoryMargin / 100.0,
		BackoffInitial: DefaultBackoffInitial, BackoffMax: DefaultBackoffMax,
	}
	if p := c.Pods; p != nil {
		if p.Type == intstr.String {
			var pct int
			if _, err := fmt.Sscanf(p.StrVal, "%d%%", &pct); err == nil && pct > 0 {
				cfg.Pods, cfg.Percent = 0, min(pct, 100)
			}
		} else if p.IntVal > 0 {
			cfg.Pods = int(p.IntVal)
		}
	}
	if c.Window != nil {
		cfg.Window = c.Window.Duration
	}
	if g := c.Guardrails; g != nil {
		on := func(b *bool, def bool) bool {
			if b == nil {
				return def
			}
			return *b
		}
		cfg.OOMKill, cfg.Restart, cfg.Readiness = on(g.OOMKill, true), on(g.Restart, true), on(g.Readiness, true)
		cfg.CPUThrottling, cfg.MemoryNearLimit = on(g.CPUThrottling, true), on(g.MemoryNearLimit, true)
		if g.CPUThrottlingPercent != nil {
			cfg.ThrottledShare = float64(*g.CPUThrottlingPercent) / 100
		}
		if g.MemoryMarginPercent != nil {
			cfg.MemoryMargin = float64(*g.MemoryMarginPercent) / 100
		}
		for _, q := range g.Queries {
			qg := QueryGuardrail{Name: q.Name, Below: q.TripsWhen == v1alpha1.CanaryQueryBelow}
			switch {
			case q.SiblingsPercent != nil:
				qg.Relative, qg.Percent = true, float64(*q.SiblingsPercent)
			case q.Threshold != nil:
				// Spec.Validate refused a threshold that does not parse.
				qg.Threshold, _ = strconv.ParseFloat(*q.Threshold, 64)
			}
			cfg.Queries = append(cfg.Queries, qg)
		}
	}
	if b := c.Backoff; b != nil {
		if b.Initial != nil {
			cfg.BackoffInitial = b.Initial.Duration
		}
		if b.Max != nil {
			cfg.BackoffMax = b.Max.Duration
		}
	}
	return cfg, true
}

// count is how many canary pods a workload of n pods gets: at least one,
// at most n and MaxPods.
func (c Config) count(n int) int {
	want := c.Pods
	if c.Percent > 0 {
		want = (n*c.Percent + 99) / 100
	}
	return max(1, min(want, n, MaxPods))
}

// Backoff is the hold after the trips-th rollback in a row: the initial
// hold, doubled for each earlier trip, at most the cap.
func (c Config) Backoff(trips int32) time.Duration {
	d := c.BackoffInitial
	for i := int32(1); i < trips && d < c.BackoffMax; i++ {
		d *= 2
	}
	return min(d, c.BackoffMax)
}

// watching names the guardrails watched, for the Canary condition.
func (c Config) watching() string {
	var on []string
	if c.OOMKill {
		on = append(on, "OOM kills")
	}
	if c.Restart {
		on = append(on, "restarts")
	}
	if c.Readiness {
		on = append(on, "readiness lost")
	}
	if c.CPUThrottling {
		on = append(on, fmt.Sprintf("CPU throttled above %.0f%%", c.ThrottledShare*100))
	}
	if c.MemoryNearLimit {
		on = append(on, fmt.Sprintf("working set within %.0f%% of the memory limit", c.MemoryMargin*100))
	}
	for _, q := range c.Queries {
		on = append(on, "query "+q.Name+" "+q.bound())
	}
	if len(on) == 0 {
		return "no guardrail"
	}
	return strings.Join(on, ", ")
}

// Gate is a policy's canary as a lowering.Gate: it holds the lowerings the
// canary stands for, sends its rollbacks, and reports its Outcome. A
// policy without a canary passes everything and reports the zero Outcome;
// in mode Off, which lowers nothing, the canary stands where it was.
type Gate struct {
	// State is what the canary left at the last sync (the zero value:
	// none).
	State State
	// Answers are the query guardrails' answers, by name, asked for the
	// pods LivePods names this sync; a guardrail missing here was not
	// asked, and is unanswered.
	Answers map[string]GuardrailAnswer
}

var _ lowering.Gate[Outcome] = Gate{}

// Pass plans the canary's part of the sync (planCanary).
func (g Gate) Pass(in fleet.PolicyInput) (fleet.PolicyInput, lowering.Settle[Outcome], error) {
	cfg, on := ConfigOf(in.Spec)
	switch {
	case !on:
		return in, func(*fleet.PolicyDecision) Outcome { return Outcome{} }, nil
	case in.Spec.Mode() == v1alpha1.UpdateModeOff:
		return in, func(*fleet.PolicyDecision) Outcome {
			return Outcome{Active: true, State: g.State, Status: metav1.ConditionFalse, Reason: v1alpha1.CanaryReasonIdle,
				Message: "updateMode is Off: nothing is lowered, so no canary runs"}
		}, nil
	}
	plan, err := planCanary(in, g.State, cfg, g.Answers)
	if err != nil {
		return in, nil, err
	}
	return plan.input, plan.settle, nil
}

// canaryPlan is the canary's part of one sync, before and after
// DecidePolicy: which pods' lowerings are taken out of its input and why,
// which pods may be lowered as canaries, and the rollbacks sent whatever
// DecidePolicy says.
type canaryPlan struct {
	cfg   Config
	now   time.Time
	input fleet.PolicyInput
	state State
	// wish is each pod's own decision, by UID, before anything is held.
	wish map[types.UID]podchange.Decision
	// chosen are the pods that may be lowered as canaries this sync.
	chosen map[types.UID]bool
	// held are the lowerings taken out, by pod UID.
	held      map[types.UID]fleet.Held
	rollbacks []fleet.Action
	refused   []fleet.Held
	events    []Event
	retry     time.Duration
	promoted  bool
	// answers are the query guardrails' answers this sync, by name, and
	// unanswered says which of them had none, and why.
	answers    map[string]GuardrailAnswer
	unanswered []string
}

// planCanary decides, before DecidePolicy, what the canary does this sync:
// it rolls back the canary pods when a guardrail trips, promotes them when
// their window passed, and otherwise holds the lowerings the canary stands
// for: those of the other pods while the canary pods are watched, and all
// of them during a rollback's backoff. Raises are left as they are. Each
// pod's lowering is told apart by its own decision (Decide, as
// DecidePolicy's first pass makes it).
//
// The query guardrails are judged on answers, asked for by the caller for
// the pods LivePods names. A query without an answer neither trips
// nor passes: the canary is not promoted, nor rolled back, until it
// answers, since a guardrail that cannot see is no proof that the lowering
// is harmless.
func planCanary(in fleet.PolicyInput, st State, cfg Config, answers map[string]GuardrailAnswer) (*canaryPlan, error) {
	// The plan changes its input's pods: not the caller's.
	in.Pods = append([]fleet.PodInput(nil), in.Pods...)
	cp := &canaryPlan{cfg: cfg, now: in.Now, input: in, state: st, wish: map[types.UID]podchange.Decision{},
		chosen: map[types.UID]bool{}, held: map[types.UID]fleet.Held{}, answers: answers}
	byUID := map[types.UID]fleet.PodInput{}
	for _, p := range in.Pods {
		byUID[p.Pod.UID] = p
		d, err := in.Wish(p)
		if err != nil {
			return nil, err
		}
		cp.wish[p.Pod.UID] = d
	}
	cp.revert(byUID)
	pods := make([]*corev1.Pod, len(in.Pods))
	for i, p := range in.Pods {
		pods[i] = p.Pod
	}
	live := LivePods(cp.state, pods)
	cp.state.Pods = live
	if len(live) > 0 {
		if cp.trip(live, byUID) {
			cp.holdAll(HoldBackoff)
			return cp, nil
		}
		if !cp.promote(live, byUID) {
			cp.watch(live)
			return cp, nil
		}
	}
	if cp.now.Before(cp.state.HoldUntil) {
		cp.holdAll(HoldBackoff)
		cp.retry = fleet.Soonest(cp.retry, cp.state.HoldUntil.Sub(cp.now))
		return cp, nil
	}
	cp.state.HoldUntil = time.Time{}
	cp.start()
	return cp, nil
}

// LivePods are the canary pods of st still among pods whose spec
// shows their lowering: one deleted, or whose resize was never taken, is no
// canary. Their guardrails are judged; the query guardrails are asked about
// them.
func LivePods(st State, pods []*corev1.Pod) []Pod {
	byUID := make(map[types.UID]*corev1.Pod, len(pods))
	for _, p := range pods {
		byUID[p.UID] = p
	}
	var live []Pod
	for _, c := range st.Pods {
		if p, ok := byUID[c.UID]; ok && below(p, c.Before) {
			live = append(live, c)
		}
	}
	return live
}

// revert sends again the rollbacks whose pods' spec does not show them, and
// forgets those that do.
func (cp *canaryPlan) revert(byUID map[types.UID]fleet.PodInput) {
	var keep []Pod
	for _, c := range cp.state.Revert {
		p, ok := byUID[c.UID]
		if !ok || !below(p.Pod, c.Before) {
			continue
		}
		keep = append(keep, c)
		cp.rollback(p, c)
	}
	cp.state.Revert = keep
}

// trip checks each canary pod's guardrails; when one trips, every canary
// pod is rolled back, and the hold starts.
func (cp *canaryPlan) trip(live []Pod, byUID map[types.UID]fleet.PodInput) bool {
	var trips []tripped
	for _, c := range live {
		if g, what, ok := cp.cfg.guardrail(c, byUID[c.UID]); ok {
			trips = append(trips, tripped{pod: c, guardrail: g, what: what})
		}
	}
	// The queries are asked about the canary pods together: each that
	// trips trips them all.
	cp.unanswered = nil
	for _, q := range cp.cfg.Queries {
		a, asked := cp.answers[q.Name]
		if !asked {
			a = GuardrailAnswer{Canary: QueryAnswer{Missing: "not asked"}}
		}
		switch v, what := q.judge(a); v {
		case queryTrips:
			for _, c := range live {
				trips = append(trips, tripped{pod: c, guardrail: GuardrailQuery, query: q.Name, what: what})
			}
		case queryUnanswered:
			cp.unanswered = append(cp.unanswered, q.Name+" ("+what+")")
		}
	}
	if len(trips) == 0 {
		return false
	}
	st := &cp.state
	st.Trips++
	hold := cp.cfg.Backoff(st.Trips)
	st.HoldUntil = cp.now.Add(hold)
	// What was learnt: below what the canary pods had, nothing is
	// proven any more, and new pods are not sized there.
	back := Values{}
	for _, c := range live {
		back.raiseTo(c.Before)
		cp.rollback(byUID[c.UID], c)
	}
	if st.Proven == nil {
		st.Proven = Values{}
	}
	st.Proven.raiseTo(back)
	st.Revert = append(st.Revert, live...)
	st.Pods = nil
	first := trips[0]
	st.LastResult = v1alpha1.CanaryReasonRolledBack
	st.Learnt = fmt.Sprintf("canary pod %s rolled back in place at %s: %s; lowerings are held for %s, until %s (rollback %d since the last promotion), and new pods are not sized below %s",
		first.pod.Name, lowering.Stamp(cp.now), first, hold, lowering.Stamp(st.HoldUntil), st.Trips, back)
	for _, t := range trips {
		cp.events = append(cp.events, Event{Reason: EventRolledBack, Pod: byUID[t.pod.UID].Pod, Guardrail: t.guardrail,
			Message: fmt.Sprintf("%s: raised back in place to %s; the workload's lowerings are held for %s", t, t.pod.Before, hold)})
	}
	cp.retry = fleet.Soonest(cp.retry, hold)
	return true
}

// tripped is a guardrail a canary pod tripped, and what it saw.
type tripped struct {
	pod       Pod
	guardrail Guardrail
	// query names the query guardrail, for GuardrailQuery.
	query string
	what  string
}

// String says which guardrail tripped and by how much.
func (t tripped) String() string {
	if t.guardrail == GuardrailQuery {
		return fmt.Sprintf("guardrail %s: %s", t.query, t.what)
	}
	return fmt.Sprintf("%s (guardrail %s)", t.what, t.guardrail)
}

// promote ends the window of canary pods that held: their values are
// proven, and the other pods follow. False while the window runs, a
// canary's resize is still being applied, or a query guardrail has no
// answer.
func (cp *canaryPlan) promote(live []Pod, byUID map[types.UID]fleet.PodInput) bool {
	end := windowEnd(live, cp.cfg.Window)
	if cp.now.Before(end) || len(cp.unanswered) > 0 {
		return false
	}
	proven := Values{}
	var names []string
	for _, c := range live {
		p := byUID[c.UID]
		if p.InFlight {
			return false
		}
		proven.raiseTo(valuesOf(p.Pod))
		names = append(names, c.Name)
	}
	st := &cp.state
	st.Proven, st.Pods, st.Trips, st.HoldUntil = proven, nil, 0, time.Time{}
	st.LastResult = v1alpha1.CanaryReasonPromoted
	st.Learnt = fmt.Sprintf("canary pod(s) %s held through the %s window with no guardrail tripped; promoted at %s: the other pods follow, and lowerings down to %s need no canary",
		strings.Join(names, ", "), cp.cfg.Window, lowering.Stamp(cp.now), proven)
	cp.events = append(cp.events, Event{Reason: EventPromoted,
		Message: fmt.Sprintf("canary pod(s) %s held through the %s window: the other pods follow, down to %s", strings.Join(names, ", "), cp.cfg.Window, proven)})
	cp.promoted = true
	return true
}

// watch holds, while the canary pods are watched, every other lowering and
// any further one of the canary pods, but lets more pods join the canary
// until it has as many as configured.
func (cp *canaryPlan) watch(live []Pod) {
	inCanary := map[types.UID]bool{}
	var names []string
	for _, c := range live {
		inCanary[c.UID] = true
		names = append(names, c.Name)
	}
	need := cp.needing(inCanary)
	for _, uid := range need[:max(0, min(cp.cfg.count(len(cp.input.Pods))-len(live), len(need)))] {
		cp.chosen[uid] = true
	}
	end := windowEnd(live, cp.cfg.Window)
	msg := fmt.Sprintf("canary pod(s) %s are watched until %s; the other pods' lowerings wait for them", strings.Join(names, ", "), lowering.Stamp(end))
	if !cp.now.Before(end) {
		msg = fmt.Sprintf("canary pod(s) %s are held past their window (it ended %s) until every query guardrail answers; the other pods' lowerings wait for them", strings.Join(names, ", "), lowering.Stamp(end))
	}
	cp.holdLowerings(Hold, msg, func(uid types.UID) bool { return !cp.chosen[uid] })
	if wait := end.Sub(cp.now); wait > 0 {
		cp.retry = fleet.Soonest(cp.retry, wait)
	}
}

// start picks the canary pods of a lowering that needs one (by name among
// the pods it is for) and holds the others'; lowerings down to proven
// values go on.
func (cp *canaryPlan) start() {
	need := cp.needing(nil)
	if len(need) == 0 {
		return
	}
	n := min(cp.cfg.count(len(cp.input.Pods)), len(need))
	var names []string
	for _, uid := range need[:n] {
		cp.chosen[uid] = true
		for _, p := range cp.input.Pods {
			if p.Pod.UID == uid {
				names = append(names, p.Pod.Name)
			}
		}
	}
	waiting := map[types.UID]bool{}
	for _, uid := range need[n:] {
		waiting[uid] = true
	}
	cp.holdLowerings(Hold, fmt.Sprintf("the lowering goes to canary pod(s) %s first", strings.Join(names, ", ")),
		func(uid types.UID) bool { return waiting[uid] })
}

// needing are the pods, by name, whose lowering goes below what a canary
// proved, not counting those in skip.
func (cp *canaryPlan) needing(skip map[types.UID]bool) []types.UID {
	var out []types.UID
	for _, p := range cp.input.Pods {
		uid := p.Pod.UID
		if skip[uid] || cp.reverting(uid) || !needsCanary(cp.wish[uid], cp.state.Proven) {
			continue
		}
		out = append(out, uid)
	}
	// The decision's pods come sorted by name; sort anyway, the pick must
	// not depend on the caller.
	names := map[types.UID]string{}
	for _, p := range cp.input.Pods {
		names[p.Pod.UID] = p.Pod.Name
	}
	sort.SliceStable(out, func(i, j int) bool { return names[out[i]] < names[out[j]] })
	return out
}

func (cp *canaryPlan) reverting(uid types.UID) bool {
	for _, c := range cp.state.Revert {
		if c.UID == uid {
			return true
		}
	}
	return false
}

// holdAll holds every lowering of the workload, for the backoff.
func (cp *canaryPlan) holdAll(reason fleet.HoldReason) {
	msg := fmt.Sprintf("lowerings are held until %s: %s", lowering.Stamp(cp.state.HoldUntil), cp.state.Learnt)
	cp.holdLowerings(reason, msg, func(types.UID) bool { return true })
}

// holdLowerings takes the lowerings of the pods hold says out of
// DecidePolicy's input, leaving their raises, and says why.
func (cp *canaryPlan) holdLowerings(reason fleet.HoldReason, msg string, hold func(types.UID) bool) {
	pods := make([]fleet.PodInput, len(cp.input.Pods))
	for i, p := range cp.input.Pods {
		pods[i] = p
		uid := p.Pod.UID
		down := lowering.Changes(cp.wish[uid])
		if len(down) == 0 || !hold(uid) {
			continue
		}
		pods[i] = lowering.Without(p, down)
		cp.held[uid] = fleet.Held{Pod: p.Pod, Reason: reason, Message: msg, Decision: cp.wish[uid]}
	}
	cp.input.Pods = pods
}

// rollback raises a canary pod back to what it had before its lowering,
// whatever holds other resizes; the pod is taken out of DecidePolicy's
// input. A resource raised since stays where it is: a rollback only raises.
func (cp *canaryPlan) rollback(p fleet.PodInput, c Pod) {
	for i, q := range cp.input.Pods {
		if q.Pod.UID == c.UID {
			q.Targets, q.PodTarget = nil, podchange.Target{}
			cp.input.Pods[i] = q
		}
	}
	var d podchange.Decision
	names := make([]string, 0, len(c.Before))
	for n := range c.Before {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		var now *corev1.ResourceRequirements
		if name == podcontainers.PodLevelName {
			now = p.Pod.Spec.Resources
		} else if ctr := podcontainers.Named(p.Pod, name); ctr != nil {
			now = &ctr.Resources
		}
		if now == nil {
			continue
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			ch, ok := raiseBack(name, r, *now, c.Before[name])
			if !ok {
				continue
			}
			if name == podcontainers.PodLevelName {
				d.PodChanges = append(d.PodChanges, ch)
			} else {
				d.Changes = append(d.Changes, ch)
			}
		}
	}
	if d.Empty() {
		return
	}
	d.Desired = podchange.DesiredOf(p.Pod, d.Changes, d.PodChanges)
	plan, err := resize.Plan(resize.Input{Pod: p.Pod, Desired: d.Desired, Node: cp.input.Nodes[p.Pod.Spec.NodeName], Server: cp.input.Server, Rules: cp.input.Rules})
	switch {
	case err != nil:
		cp.refused = append(cp.refused, fleet.Held{Pod: p.Pod, Reason: fleet.HoldRefused, Decision: d, Message: fmt.Sprintf("the canary's rollback cannot be planned: %v", err)})
	case plan.NoChange:
	case plan.Outcome == resize.Refused:
		cp.refused = append(cp.refused, fleet.Held{Pod: p.Pod, Reason: fleet.HoldRefused, Rule: plan.Rule, Decision: d,
			Message: fmt.Sprintf("the canary's rollback: Kubernetes would refuse it (rule %s): %s", plan.Rule, plan.Message)})
	default:
		// Sent even when the node has no room now: the kubelet applies
		// it as soon as it has, and nothing else would be sooner.
		cp.rollbacks = append(cp.rollbacks, fleet.Action{Pod: p.Pod, Decision: d, Plan: plan})
	}
}

// raiseBack is the change that brings resource r of container name back up
// to before; false when nothing is below it.
func raiseBack(name string, r corev1.ResourceName, now, before corev1.ResourceRequirements) (podchange.Change, bool) {
	req, ok := now.Requests[r]
	if !ok {
		return podchange.Change{}, false
	}
	ch := podchange.Change{Container: name, Resource: r, RequestBefore: req, RequestNow: req, Notes: []string{"canary rolled back"}}
	raised := false
	if b, ok := before.Requests[r]; ok && b.Cmp(req) > 0 {
		ch.RequestNow, raised = b.DeepCopy(), true
	}
	if lim, ok := now.Limits[r]; ok {
		was, to := lim.DeepCopy(), lim.DeepCopy()
		if b, ok := before.Limits[r]; ok && b.Cmp(lim) > 0 {
			to, raised = b.DeepCopy(), true
		}
		ch.LimitBefore, ch.LimitNow = &was, &to
	}
	return ch, raised
}

// settle completes the plan with DecidePolicy's answer: the canary pods
// whose lowering is sent start their window, the lowerings the canary took
// out are reported held, and the rollbacks go first.
func (cp *canaryPlan) settle(d *fleet.PolicyDecision) Outcome {
	sent := map[types.UID]bool{}
	for _, a := range cp.rollbacks {
		sent[a.Pod.UID] = true
	}
	for _, a := range d.Resizes {
		uid := a.Pod.UID
		sent[uid] = true
		if !cp.chosen[uid] || len(lowering.Changes(a.Decision)) == 0 {
			continue
		}
		c := Pod{UID: uid, Name: a.Pod.Name, LoweredAt: cp.now, Ready: podReady(a.Pod), Before: valuesOf(a.Pod), Restarts: restartsOf(a.Pod)}
		cp.state.Pods = append(cp.state.Pods, c)
		cp.events = append(cp.events, Event{Reason: EventStarted, Pod: a.Pod,
			Message: fmt.Sprintf("lowered first, as a canary: %s; the other pods follow if no guardrail trips by %s (%s)",
				changesText(lowering.Changes(a.Decision)), lowering.Stamp(cp.now.Add(cp.cfg.Window)), cp.cfg.watching())})
		cp.retry = fleet.Soonest(cp.retry, cp.cfg.Window)
	}
	already := map[types.UID]bool{}
	for _, h := range d.Held {
		already[h.Pod.UID] = true
	}
	for _, p := range cp.input.Pods {
		if h, ok := cp.held[p.Pod.UID]; ok && !sent[p.Pod.UID] && !already[p.Pod.UID] {
			d.Held = append(d.Held, h)
		}
	}
	d.Held = append(d.Held, cp.refused...)
	for _, a := range cp.rollbacks {
		d.Decisions[a.Pod.Name] = a.Decision
	}
	d.Resizes = append(append([]fleet.Action(nil), cp.rollbacks...), d.Resizes...)
	if cp.retry > 0 && (d.RetryAfter == 0 || cp.retry < d.RetryAfter) {
		d.RetryAfter = cp.retry
	}
	out := Outcome{Active: true, State: cp.state, Events: cp.events}
	out.Status, out.Reason, out.Message = cp.condition(len(cp.held))
	return out
}

// condition is the Canary condition after this sync.
func (cp *canaryPlan) condition(waiting int) (metav1.ConditionStatus, string, string) {
	st := cp.state
	if len(st.Pods) > 0 {
		var names []string
		for _, c := range st.Pods {
			names = append(names, c.Name)
		}
		end := windowEnd(st.Pods, cp.cfg.Window)
		unanswered := ""
		if len(cp.unanswered) > 0 {
			unanswered = fmt.Sprintf("; query guardrail(s) without an answer: %s", strings.Join(cp.unanswered, "; "))
		}
		if !cp.now.Before(end) && len(cp.unanswered) > 0 {
			return metav1.ConditionTrue, v1alpha1.CanaryReasonWatching, fmt.Sprintf("canary pod(s) %s held past their window (it ended %s): no guardrail tripped, but the canary is neither promoted nor rolled back until every query guardrail answers%s; %d other pod(s)' lowerings wait",
				strings.Join(names, ", "), lowering.Stamp(end), unanswered, waiting)
		}
		return metav1.ConditionTrue, v1alpha1.CanaryReasonWatching, fmt.Sprintf("canary pod(s) %s lowered and watched until %s for %s%s; %d other pod(s)' lowerings wait",
			strings.Join(names, ", "), lowering.Stamp(end), cp.cfg.watching(), unanswered, waiting)
	}
	if cp.now.Before(st.HoldUntil) {
		return metav1.ConditionTrue, v1alpha1.CanaryReasonRolledBack, st.Learnt
	}
	if len(cp.chosen) > 0 {
		// Chosen, but not lowered yet: a resize in flight, or
		// maxConcurrentResizes, holds it this sync.
		var names []string
		for _, p := range cp.input.Pods {
			if cp.chosen[p.Pod.UID] {
				names = append(names, p.Pod.Name)
			}
		}
		return metav1.ConditionTrue, v1alpha1.CanaryReasonWatching, fmt.Sprintf("canary pod(s) %s are to be lowered first; %d other pod(s)' lowerings wait",
			strings.Join(names, ", "), waiting)
	}
	if st.LastResult == v1alpha1.CanaryReasonPromoted {
		return metav1.ConditionFalse, v1alpha1.CanaryReasonPromoted, st.Learnt
	}
	msg := "no lowering waits for a canary"
	if st.Learnt != "" {
		msg += "; last canary: " + st.Learnt
	}
	return metav1.ConditionFalse, v1alpha1.CanaryReasonIdle, msg
}

// guardrail says which guardrail, if any, a canary pod trips now, and by
// how much. Each is judged on what happened after its lowering.
func (c Config) guardrail(cp Pod, pin fleet.PodInput) (Guardrail, string, bool) {
	p := pin.Pod
	if pin.ResizeRefused != "" {
		return GuardrailResizeRefused, "the kubelet did not apply the lowering (" + pin.ResizeRefused + ")", true
	}
	if c.OOMKill {
		for _, t := range metrics.Terminations(p, cp.LoweredAt) {
			if t.OOMKilled || (t.SIGKILL && t.MemoryLimit > 0) {
				return GuardrailOOMKill, fmt.Sprintf("container %s OOM-killed at %s under its %s memory limit", t.Container, lowering.Stamp(t.FinishedAt), bytesText(t.MemoryLimit)), true
			}
		}
	}
	if c.Restart {
		for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
			for _, s := range list {
				if was, known := cp.Restarts[s.Name]; known && s.RestartCount > was {
					return GuardrailRestart, fmt.Sprintf("container %s restart count %d -> %d", s.Name, was, s.RestartCount), true
				}
			}
		}
	}
	if c.Readiness && cp.Ready && !podReady(p) {
		what := "pod no longer Ready"
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Reason != "" {
				what += " (" + cond.Reason + ")"
			}
		}
		return GuardrailReadiness, what, true
	}
	names := podcontainers.Names(p)
	if c.MemoryNearLimit {
		for _, n := range names {
			ws, seen := pin.WorkingSet[n]
			lim, limited := podcontainers.Named(p, n).Resources.Limits[corev1.ResourceMemory]
			if !seen || !limited || lim.IsZero() {
				continue
			}
			if float64(ws.Value()) >= float64(lim.Value())*(1-c.MemoryMargin) {
				return GuardrailMemoryNearLimit, fmt.Sprintf("container %s working set %s within %.0f%% of the %s memory limit",
					n, bytesText(float64(ws.Value())), c.MemoryMargin*100, lim.String()), true
			}
		}
	}
	if c.CPUThrottling {
		for _, n := range names {
			if share, seen := pin.Throttled[n]; seen && share > c.ThrottledShare {
				return GuardrailCPUThrottling, fmt.Sprintf("container %s throttled in %.0f%% of its CFS periods, above %.0f%%", n, share*100, c.ThrottledShare*100), true
			}
		}
	}
	return "", "", false
}

// Floor is what new pods of the workload (and its recommendation in
// status) are not sized below while the policy has a canary: what a canary
// proved, or what a rolled-back one had (before either, what the pods have
// now), and what the canary pods had while they are watched.
func Floor(st State, pods []*corev1.Pod) Values {
	floor := Values{}
	if len(st.Proven) > 0 {
		floor.raiseTo(st.Proven)
	} else {
		for _, p := range pods {
			floor.raiseTo(valuesOf(p))
		}
	}
	for _, c := range st.Pods {
		floor.raiseTo(c.Before)
	}
	return floor
}

// FloorRecommendation is rec with each target request raised to floor; rec
// itself is not changed.
func FloorRecommendation(rec *v1alpha1.Recommendation, floor Values) *v1alpha1.Recommendation {
	if rec == nil || len(floor) == 0 {
		return rec
	}
	out := rec.DeepCopy()
	for i := range out.ContainerRecommendations {
		cr := &out.ContainerRecommendations[i]
		f, ok := floor[cr.ContainerName]
		if !ok {
			continue
		}
		for r, q := range cr.Target {
			if lo, ok := f.Requests[r]; ok && lo.Cmp(q) > 0 {
				cr.Target[r] = lo.DeepCopy()
			}
		}
	}
	return out
}

// raiseTo raises each value of v to the one of o where o's is higher, and
// adds those v lacks.
func (v Values) raiseTo(o Values) {
	for name, req := range o {
		have := v[name]
		have.Requests = higher(have.Requests, req.Requests)
		have.Limits = higher(have.Limits, req.Limits)
		v[name] = have
	}
}

func higher(a, b corev1.ResourceList) corev1.ResourceList {
	if len(b) == 0 {
		return a
	}
	out := a.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for r, q := range b {
		if have, ok := out[r]; !ok || q.Cmp(have) > 0 {
			out[r] = q.DeepCopy()
		}
	}
	return out
}

// String says the values for people, sorted: "app cpu 200m/400m, memory
// 128Mi" (request/limit).
func (v Values) String() string {
	names := make([]string, 0, len(v))
	for n := range v {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		var rs []string
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, ok := v[n].Requests[r]
			if !ok {
				continue
			}
			s := string(r) + " " + req.String()
			if lim, ok := v[n].Limits[r]; ok {
				s += "/" + lim.String()
			}
			rs = append(rs, s)
		}
		if len(rs) > 0 {
			label := n
			if n == podcontainers.PodLevelName {
				label = "pod"
			}
			parts = append(parts, label+" "+strings.Join(rs, ", "))
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, "; ")
}

// valuesOf are a pod's cpu and memory requests and limits now.
func valuesOf(p *corev1.Pod) Values {
	out := Values{}
	keep := func(l corev1.ResourceList) corev1.ResourceList {
		var o corev1.ResourceList
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := l[r]; ok {
				if o == nil {
					o = corev1.ResourceList{}
				}
				o[r] = q.DeepCopy()
			}
		}
		return o
	}
	for _, c := range podcontainers.Running(&p.Spec) {
		out[c.Name] = corev1.ResourceRequirements{Requests: keep(c.Resources.Requests), Limits: keep(c.Resources.Limits)}
	}
	if podchange.HasPodLevel(p) {
		out[podcontainers.PodLevelName] = corev1.ResourceRequirements{Requests: keep(p.Spec.Resources.Requests), Limits: keep(p.Spec.Resources.Limits)}
	}
	return out
}

// below reports whether any of p's values is under what it had before.
func below(p *corev1.Pod, before Values) bool {
	now := valuesOf(p)
	for name, b := range before {
		n := now[name]
		for _, pair := range [][2]corev1.ResourceList{{n.Requests, b.Requests}, {n.Limits, b.Limits}} {
			for r, was := range pair[1] {
				if q, ok := pair[0][r]; ok && q.Cmp(was) < 0 {
					return true
				}
			}
		}
	}
	return false
}

// restartsOf are a pod's containers' restart counts.
func restartsOf(p *corev1.Pod) map[string]int32 {
	out := map[string]int32{}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, s := range list {
			out[s.Name] = s.RestartCount
		}
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// windowEnd is when the window of the last canary pod lowered ends.
func windowEnd(pods []Pod, window time.Duration) time.Time {
	var last time.Time
	for _, c := range pods {
		if c.LoweredAt.After(last) {
			last = c.LoweredAt
		}
	}
	return last.Add(window)
}

// needsCanary reports whether d lowers anything below what a canary proved
// (anything at all when none did).
func needsCanary(d podchange.Decision, proven Values) bool {
	for _, ch := range lowering.Changes(d) {
		pv, ok := proven[ch.Container]
		if !ok {
			return true
		}
		req, ok := pv.Requests[ch.Resource]
		if !ok || ch.RequestNow.Cmp(req) < 0 {
			return true
		}
		if ch.LimitNow != nil {
			if lim, ok := pv.Limits[ch.Resource]; ok && ch.LimitNow.Cmp(lim) < 0 {
				return true
			}
		}
	}
	return false
}

// changesText says what a canary's lowering changes: "app cpu 500m -> 200m".
func changesText(changes []podchange.Change) string {
	parts := make([]string, 0, len(changes))
	for _, ch := range changes {
		name := ch.Container
		if name == podcontainers.PodLevelName {
			name = "pod"
		}
		parts = append(parts, fmt.Sprintf("%s %s %s -> %s", name, ch.Resource, ch.RequestBefore.String(), ch.RequestNow.String()))
	}
	return strings.Join(parts, ", ")
}

func bytesText(b float64) string {
	return resource.NewQuantity(int64(math.Round(b/(1<<20)))*(1<<20), resource.BinarySI).String()
}

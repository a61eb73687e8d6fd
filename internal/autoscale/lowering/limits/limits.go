package limits

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/lowering"
	"github.com/tailorhq/tailor/internal/podchange"
)

// BudgetPeriod is the rolling period of behavior.scaleDown.budget: a pod
// lowered counts against the budget for this long.
const BudgetPeriod = time.Hour

// MaxBudgetPods bounds a lowering budget, as the CRD and the checkpoint
// (which keeps one entry per pod lowered within the period) do.
const MaxBudgetPods = 1000

// HoldReasons of the lowerings a change window or the budget holds: the
// reasons of the LoweringsHeld condition too, so ResizesBlocked and it say
// the same.
const (
	// HoldOutsideWindow: no change window of the policy is open.
	HoldOutsideWindow = fleet.HoldReason(v1alpha1.LoweringsReasonOutsideWindow)
	// HoldBudget: the pods lowered within the last hour use up the budget.
	HoldBudget = fleet.HoldReason(v1alpha1.LoweringsReasonBudgetSpent)
	// HoldNamespaceBudget: the namespace's pods lowered within the last
	// hour, by every policy of the namespace, use up the namespace budget.
	HoldNamespaceBudget = fleet.HoldReason(v1alpha1.LoweringsReasonNamespaceBudgetSpent)
)

// ChangeWindow is one of behavior.scaleDown.windows, parsed.
type ChangeWindow struct {
	schedule cron.Schedule
	duration time.Duration
	// text says the window for people: its schedule, zone and duration.
	text string
}

// Config are behavior.scaleDown.windows and budget, parsed: when
// lowerings may start, and how many pods may be lowered per BudgetPeriod.
type Config struct {
	Windows []ChangeWindow
	// BudgetPods is the budget as a count, or BudgetPercent as a share of
	// the policy's running pods (BudgetPods is then 0); both 0: no budget.
	BudgetPods, BudgetPercent int
	// NamespacePods and NamespacePercent are the namespace budget
	// (budget.namespacePods) likewise, the percent of the namespace's
	// running pods; both 0: none.
	NamespacePods, NamespacePercent int
}

// HasNamespaceBudget says whether the policy sets budget.namespacePods:
// its lowerings then wait for the namespace's count.
func (l Config) HasNamespaceBudget() bool {
	return l.NamespacePods > 0 || l.NamespacePercent > 0
}

// cronParser reads the five standard fields and the @daily kind of
// descriptor, as a CronJob's schedule; a CRON_TZ= prefix and @every are
// refused where the schedule is read (ParseChangeWindow).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseChangeWindow reads one change window. The error says what to change:
// the controller shows it as the policy's InvalidPolicy reason.
func ParseChangeWindow(w v1alpha1.ChangeWindow) (ChangeWindow, error) {
	spec := strings.TrimSpace(w.Schedule)
	if strings.Contains(spec, "TZ=") || strings.HasPrefix(spec, "@every") {
		return ChangeWindow{}, fmt.Errorf("schedule %q: set the time zone in timeZone and use five cron fields or @hourly, @daily, @weekly, @monthly, @yearly", w.Schedule)
	}
	sched, err := cronParser.Parse(spec)
	if err != nil {
		return ChangeWindow{}, fmt.Errorf("schedule %q is not a cron schedule such as '0 22 * * 1-5': %w", w.Schedule, err)
	}
	zone := "UTC"
	if w.TimeZone != nil && *w.TimeZone != "" {
		zone = *w.TimeZone
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return ChangeWindow{}, fmt.Errorf("timeZone %q is not a time zone the manager knows (an IANA name such as Europe/Berlin): %w", zone, err)
	}
	spec2, ok := sched.(*cron.SpecSchedule)
	if !ok {
		return ChangeWindow{}, fmt.Errorf("schedule %q: want five cron fields", w.Schedule)
	}
	// The parser leaves time.Local, which Next reads as "the zone of the
	// time asked about": the manager's zone must not move a window.
	spec2.Location = loc
	if w.Duration.Duration <= 0 {
		return ChangeWindow{}, fmt.Errorf("schedule %q: duration must be positive", w.Schedule)
	}
	return ChangeWindow{schedule: spec2, duration: w.Duration.Duration,
		text: fmt.Sprintf("%q %s for %s", spec, zone, w.Duration.Duration)}, nil
}

// ConfigOf is the policy's change windows and lowering budget;
// false when it has neither. The error is a window the apiserver could not
// judge (a time zone, a cron field out of range), for InvalidPolicy.
func ConfigOf(spec *v1alpha1.TailorPolicySpec) (Config, bool, error) {
	if spec.Behavior == nil || spec.Behavior.ScaleDown == nil {
		return Config{}, false, nil
	}
	sd := spec.Behavior.ScaleDown
	var out Config
	for i, w := range sd.Windows {
		cw, err := ParseChangeWindow(w)
		if err != nil {
			return Config{}, false, fmt.Errorf("behavior.scaleDown.windows[%d]: %w", i, err)
		}
		out.Windows = append(out.Windows, cw)
	}
	if b := sd.Budget; b != nil {
		var err error
		if out.BudgetPods, out.BudgetPercent, err = parseBudget("pods", b.Pods); err != nil {
			return Config{}, false, err
		}
		if out.NamespacePods, out.NamespacePercent, err = parseBudget("namespacePods", b.NamespacePods); err != nil {
			return Config{}, false, err
		}
	}
	return out, len(out.Windows) > 0 || out.BudgetPods > 0 || out.BudgetPercent > 0 || out.HasNamespaceBudget(), nil
}

// parseBudget reads one of budget's fields: a count (capped at
// MaxBudgetPods) or a percent; both 0 when it is unset.
func parseBudget(field string, v *intstr.IntOrString) (count, percent int, err error) {
	switch {
	case v == nil:
		return 0, 0, nil
	case v.Type == intstr.String:
		var pct int
		if _, err := fmt.Sscanf(v.StrVal, "%d%%", &pct); err != nil || pct < 1 || pct > 100 {
			return 0, 0, fmt.Errorf("behavior.scaleDown.budget.%s %q: want a count or a percent from 1%% to 100%%", field, v.StrVal)
		}
		return 0, pct, nil
	case v.IntVal < 1:
		return 0, 0, fmt.Errorf("behavior.scaleDown.budget.%s %d: want at least 1", field, v.IntVal)
	}
	return min(int(v.IntVal), MaxBudgetPods), 0, nil
}

// Budget is how many pods may be lowered per BudgetPeriod in a policy of n
// running pods; 0 when there is no budget.
func (l Config) Budget(n int) int {
	return budgetOf(l.BudgetPods, l.BudgetPercent, n)
}

// NamespaceBudget is how many of a namespace's n running pods the
// policies of the namespace may lower together per BudgetPeriod, as this
// policy's budget.namespacePods says; 0 when it sets none.
func (l Config) NamespaceBudget(n int) int {
	return budgetOf(l.NamespacePods, l.NamespacePercent, n)
}

// budgetOf is a budget given as a count, or as a percent of n pods rounded
// up, so a small workload is not stuck at zero: at least one and at most
// MaxBudgetPods; 0 when it is neither.
func budgetOf(count, percent, n int) int {
	switch {
	case count > 0:
		return count
	case percent > 0:
		return max(1, min((n*percent+99)/100, MaxBudgetPods))
	}
	return 0
}

// Open reports whether lowerings may start at t: some window opened at most
// its duration before t (or the policy has none). When none is open, next
// is when the first one opens (zero: none ever does).
func (l Config) Open(t time.Time) (open bool, next time.Time, which string) {
	if len(l.Windows) == 0 {
		return true, time.Time{}, ""
	}
	for _, w := range l.Windows {
		// The first opening after t-duration is at or before t exactly
		// when a window that opened then is still open.
		if s := w.schedule.Next(t.Add(-w.duration)); !s.IsZero() && !s.After(t) {
			return true, time.Time{}, w.text
		}
	}
	for _, w := range l.Windows {
		if s := w.schedule.Next(t); !s.IsZero() && (next.IsZero() || s.Before(next)) {
			next, which = s, w.text
		}
	}
	return false, next, which
}

// Lowered are the pods lowered within the budget's period, by UID, each
// with when its last lowering was sent.
type Lowered map[types.UID]time.Time

// Within is l without the pods lowered BudgetPeriod or more before now.
func (l Lowered) Within(now time.Time) Lowered {
	out := Lowered{}
	for uid, at := range l {
		if now.Sub(at) < BudgetPeriod {
			out[uid] = at
		}
	}
	return out
}

// frees is when the first of l stops counting; zero when l is empty.
func (l Lowered) frees() time.Time {
	var first time.Time
	for _, at := range l {
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	if first.IsZero() {
		return first
	}
	return first.Add(BudgetPeriod)
}

// LoweredBy are the pods each policy of a namespace lowered, by policy
// name.
type LoweredBy map[string]Lowered

// All are the pods any of them lowered, each at its latest lowering: a pod
// counts once, however many policies lowered it.
func (b LoweredBy) All() Lowered {
	out := Lowered{}
	for _, l := range b {
		for uid, at := range l {
			if at.After(out[uid]) {
				out[uid] = at
			}
		}
	}
	return out
}

// Add counts l as policy's lowerings: a pod already counted keeps the
// latest of its two times.
func (b LoweredBy) Add(policy string, l Lowered) {
	if len(l) == 0 {
		return
	}
	mine := b[policy]
	if mine == nil {
		mine = Lowered{}
		b[policy] = mine
	}
	for uid, at := range l {
		if at.After(mine[uid]) {
			mine[uid] = at
		}
	}
}

// NamespaceLowerings is what the namespace budget (budget.namespacePods)
// of a policy is judged by.
type NamespaceLowerings struct {
	// Policy is the name of the policy deciding: its own lowerings are
	// Gate.Lowered, fresher than ByPolicy's entry for it.
	Policy string
	// ByPolicy are the pods every policy of the namespace lowered, as
	// their checkpoints and the lowerings the manager sent since say.
	ByPolicy LoweredBy
	// Pods counts the namespace's running pods, every one of them, for a
	// budget given as a percent.
	Pods int
}

// Outcome is the change windows' and the budget's part of a sync's
// decision.
type Outcome struct {
	// Active: the policy has windows or a budget, and a LoweringsHeld
	// condition.
	Active bool
	// Lowered is the budget's state for the next sync: this sync's
	// lowerings sent counted in. A policy without a budget of its own
	// keeps it too when a policy of its namespace has a namespace budget,
	// which counts its lowerings.
	Lowered Lowered
	// Held counts the pods whose lowering a window or a budget held, by
	// the reason that held each.
	Held map[fleet.HoldReason]int
	// Status, Reason and Message are the LoweringsHeld condition's.
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// Gate is a policy's change windows and lowering budgets as a
// lowering.Gate: it holds the lowerings a closed window or a spent budget
// holds, counts those sent, and reports its Outcome.
type Gate struct {
	// Lowered are the pods the policy's budget counted, as the last sync
	// left them.
	Lowered Lowered
	// Namespace is what a namespace budget is judged by; the zero value
	// when the policy sets none.
	Namespace NamespaceLowerings
	// CountLowerings: some policy of the namespace has a namespace budget,
	// which counts this policy's lowerings, so Outcome.Lowered keeps them
	// even when the policy has no budget of its own.
	CountLowerings bool
}

var _ lowering.Gate[Outcome] = Gate{}

// Pass plans the windows' and the budgets' part of the sync (planLimits).
// A policy without windows or a budget holds nothing; in mode Off nothing
// is lowered, so nothing waits, and nothing is counted.
func (g Gate) Pass(in fleet.PolicyInput) (fleet.PolicyInput, lowering.Settle[Outcome], error) {
	lim, limited, err := ConfigOf(in.Spec)
	if err != nil {
		return in, nil, err
	}
	off := in.Spec.Mode() == v1alpha1.UpdateModeOff
	switch {
	case limited && off:
		return in, func(*fleet.PolicyDecision) Outcome {
			return Outcome{Active: true, Lowered: g.Lowered.Within(in.Now), Status: metav1.ConditionFalse, Reason: v1alpha1.LoweringsReasonAllowed,
				Message: "updateMode is Off: nothing is lowered, so nothing waits for a change window or the budget"}
		}, nil
	case limited:
		plan, err := planLimits(in, g.Lowered, g.Namespace, lim)
		if err != nil {
			return in, nil, err
		}
		return plan.input, plan.settle, nil
	case g.CountLowerings && !off:
		// Another policy's namespace budget counts what this one lowers;
		// nothing holds it.
		return in, func(d *fleet.PolicyDecision) Outcome {
			out := Outcome{Lowered: g.Lowered.Within(in.Now)}
			countSent(out.Lowered, d, in.Pods, in.Now)
			return out
		}, nil
	}
	return in, func(*fleet.PolicyDecision) Outcome { return Outcome{} }, nil
}

// Holds is what the policy's change windows and lowering budgets would
// hold of in's lowerings now, by pod: the gate's own plan (planLimits),
// asked outside a sync, as room-making asks what a pod could give. Nil when
// the policy has neither, or is in mode Off. A budget's hold has no message
// here: it is known once a sync's lowerings are counted.
func (g Gate) Holds(in fleet.PolicyInput) (map[types.UID]fleet.Held, error) {
	lim, limited, err := ConfigOf(in.Spec)
	if err != nil || !limited || in.Spec.Mode() == v1alpha1.UpdateModeOff {
		return nil, err
	}
	plan, err := planLimits(in, g.Lowered, g.Namespace, lim)
	if err != nil {
		return nil, err
	}
	return plan.held, nil
}

// budgetRoom is one budget's part of a sync: how many pods it allows per
// BudgetPeriod, those it counts already, and how many more it lets this
// sync lower.
type budgetRoom struct {
	reason  fleet.HoldReason
	allowed int
	counted Lowered
	left    int
}

// limitPlan is the windows' and the budget's part of one sync, before and
// after DecidePolicy.
type limitPlan struct {
	lim     Config
	now     time.Time
	input   fleet.PolicyInput
	lowered Lowered
	budget  int
	// ns are the namespace's lowerings, the policy's own entry lowered
	// itself (so this sync's are counted in), and nsPods its running pods;
	// nsBudget is 0 when the policy has no namespace budget.
	ns       LoweredBy
	nsPods   int
	nsBudget int
	policy   string
	open     bool
	next     time.Time
	which    string
	held     map[types.UID]fleet.Held
	reason   fleet.HoldReason
	retry    time.Duration
}

// planLimits takes out of DecidePolicy's input the lowerings a closed window
// or a spent budget (the policy's own, or the namespace's) holds, leaving
// every raise. The budgets go to the pods DecidePolicy would serve first
// (longest since their last resize, then by name), each pod lowered only
// while every budget of the policy has room for it; a pod a budget counts
// within the period may be lowered again without spending more of that
// one. A pod whose last resize is in flight is left to DecidePolicy, which
// holds it anyway. The end of a startup boost is not a lowering here: it
// gives back what the pod had.
func planLimits(in fleet.PolicyInput, lowered Lowered, ns NamespaceLowerings, lim Config) (*limitPlan, error) {
	in.Pods = append([]fleet.PodInput(nil), in.Pods...)
	lp := &limitPlan{lim: lim, now: in.Now, input: in, lowered: lowered.Within(in.Now),
		budget: lim.Budget(len(in.Pods)), held: map[types.UID]fleet.Held{}}
	// The policy's own entry is what it counts itself, with what its
	// checkpoint says besides (a policy of the name deleted and created
	// again lowered those).
	lp.ns = LoweredBy{}
	for name, l := range ns.ByPolicy {
		lp.ns.Add(name, l.Within(in.Now))
	}
	lp.ns.Add(ns.Policy, lp.lowered)
	lp.nsPods, lp.nsBudget, lp.policy = ns.Pods, lim.NamespaceBudget(ns.Pods), ns.Policy
	lp.open, lp.next, lp.which = lim.Open(in.Now)
	type want struct {
		i    int
		down []podchange.Change
		wish podchange.Decision
	}
	var wants []want
	for i, p := range in.Pods {
		if p.InFlight {
			continue
		}
		d, err := in.Wish(p)
		if err != nil {
			return nil, err
		}
		if down := limitedLowerings(d, p.Boost); len(down) > 0 {
			wants = append(wants, want{i, down, d})
		}
	}
	hold := func(w want, reason fleet.HoldReason, msg string) {
		p := in.Pods[w.i]
		lp.input.Pods[w.i] = lowering.Without(p, w.down)
		lp.held[p.Pod.UID] = fleet.Held{Pod: p.Pod, Reason: reason, Message: msg, Decision: w.wish}
		if lp.reason == "" {
			lp.reason = reason
		}
	}
	if !lp.open {
		msg := lp.closedText()
		for _, w := range wants {
			hold(w, HoldOutsideWindow, msg)
		}
		if !lp.next.IsZero() {
			lp.retry = lp.next.Sub(lp.now)
		}
		return lp, nil
	}
	var rooms []*budgetRoom
	if lp.budget > 0 {
		rooms = append(rooms, &budgetRoom{reason: HoldBudget, allowed: lp.budget, counted: lp.lowered})
	}
	if lp.nsBudget > 0 {
		rooms = append(rooms, &budgetRoom{reason: HoldNamespaceBudget, allowed: lp.nsBudget, counted: lp.ns.All()})
	}
	if len(rooms) == 0 {
		return lp, nil
	}
	for _, b := range rooms {
		b.left = b.allowed - len(b.counted)
	}
	sort.SliceStable(wants, func(a, b int) bool {
		pa, pb := in.Pods[wants[a].i], in.Pods[wants[b].i]
		if !pa.LastResize.Equal(pb.LastResize) {
			return pa.LastResize.Before(pb.LastResize)
		}
		return pa.Pod.Name < pb.Pod.Name
	})
	for _, w := range wants {
		uid := in.Pods[w.i].Pod.UID
		if short := shortRoom(rooms, uid); short != nil {
			// The message, and when it frees, are known once this
			// sync's lowerings are counted (settle).
			hold(w, short.reason, "")
			continue
		}
		for _, b := range rooms {
			if _, counted := b.counted[uid]; !counted {
				b.left--
			}
		}
	}
	return lp, nil
}

// shortRoom is the first of the budgets that has no room for lowering the
// pod uid, nil when all have: a budget that counts the pod already lets it
// be lowered again for free.
func shortRoom(rooms []*budgetRoom, uid types.UID) *budgetRoom {
	for _, b := range rooms {
		if _, counted := b.counted[uid]; !counted && b.left <= 0 {
			return b
		}
	}
	return nil
}

// limitedLowerings are the lowerings of d a window or the budget holds:
// all but a boosted container's cpu going back down.
func limitedLowerings(d podchange.Decision, boost map[string]bool) []podchange.Change {
	var out []podchange.Change
	for _, ch := range lowering.Changes(d) {
		if ch.Resource == corev1.ResourceCPU && boost[ch.Container] {
			continue
		}
		out = append(out, ch)
	}
	return out
}

// countSent counts each pod whose lowering d sends into lowered, at now:
// what the budgets count for the next sync.
func countSent(lowered Lowered, d *fleet.PolicyDecision, pods []fleet.PodInput, now time.Time) {
	boost := map[types.UID]map[string]bool{}
	for _, p := range pods {
		boost[p.Pod.UID] = p.Boost
	}
	for _, a := range d.Resizes {
		// A raise taken back before the kubelet applied it lowers
		// nothing the pod ran with.
		if !a.CutBack && len(limitedLowerings(a.Decision, boost[a.Pod.UID])) > 0 {
			lowered[a.Pod.UID] = now
		}
	}
}

func (lp *limitPlan) closedText() string {
	if lp.next.IsZero() {
		return "lowerings wait for a change window (behavior.scaleDown.windows), and none of them opens in the next five years"
	}
	return fmt.Sprintf("lowerings wait for a change window (behavior.scaleDown.windows): none is open; the next opens at %s (%s)", lowering.Stamp(lp.next), lp.which)
}

// spentText says why a budget holds lowerings: how many pods it counts,
// of how many, and when the first of them stops counting.
func (lp *limitPlan) spentText(reason fleet.HoldReason) string {
	if reason == HoldNamespaceBudget {
		all := lp.ns.All()
		if len(all) == 0 {
			return fmt.Sprintf("the namespace's lowering budget (behavior.scaleDown.budget.namespacePods) of %d pod(s) an hour%s is given to the pods that have waited longest, which wait for something else now",
				lp.nsBudget, lp.ofPods())
		}
		return fmt.Sprintf("the namespace's lowering budget (behavior.scaleDown.budget.namespacePods) is spent: %d of the namespace's pods lowered within the last hour (%s), of %d allowed%s; the next frees at %s",
			len(all), lp.byPolicy(), lp.nsBudget, lp.ofPods(), lowering.Stamp(all.frees()))
	}
	if len(lp.lowered) == 0 {
		return fmt.Sprintf("the lowering budget (behavior.scaleDown.budget) of %d pod(s) an hour is given to the pods that have waited longest, which wait for something else now",
			lp.budget)
	}
	return fmt.Sprintf("the lowering budget (behavior.scaleDown.budget) is spent: %d pod(s) lowered within the last hour, of %d allowed; the next frees at %s",
		len(lp.lowered), lp.budget, lowering.Stamp(lp.lowered.frees()))
}

// ofPods says what a namespace budget given as a percent was taken of.
func (lp *limitPlan) ofPods() string {
	if lp.lim.NamespacePercent == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d%% of %d running pod(s))", lp.lim.NamespacePercent, lp.nsPods)
}

// byPolicy says which policies lowered the namespace's pods within the
// hour, and how many each: "by policy api (1), web (2)", sorted by name.
func (lp *limitPlan) byPolicy() string {
	var parts []string
	for name, l := range lp.ns {
		if len(l) > 0 {
			parts = append(parts, fmt.Sprintf("%s (%d)", name, len(l)))
		}
	}
	sort.Strings(parts)
	return "by policy " + strings.Join(parts, ", ")
}

// settle completes the plan with DecidePolicy's answer: each pod whose
// lowering is sent is counted at now, and the lowerings taken out are
// reported held.
func (lp *limitPlan) settle(d *fleet.PolicyDecision) Outcome {
	countSent(lp.lowered, d, lp.input.Pods, lp.now)
	lp.ns.Add(lp.policy, lp.lowered)
	texts := map[fleet.HoldReason]string{}
	for uid, h := range lp.held {
		if h.Reason != HoldBudget && h.Reason != HoldNamespaceBudget {
			continue
		}
		if _, ok := texts[h.Reason]; !ok {
			texts[h.Reason] = lp.spentText(h.Reason)
			// None counted: what the budget kept back waits for what
			// held the pods it was given (a full node, a resize in
			// flight).
			frees := lp.lowered.frees()
			if h.Reason == HoldNamespaceBudget {
				frees = lp.ns.All().frees()
			}
			if !frees.IsZero() {
				lp.retry = fleet.Soonest(lp.retry, frees.Sub(lp.now))
			}
		}
		h.Message = texts[h.Reason]
		lp.held[uid] = h
	}
	already := map[types.UID]bool{}
	for _, h := range d.Held {
		already[h.Pod.UID] = true
	}
	out := Outcome{Active: true, Lowered: lp.lowered, Held: map[fleet.HoldReason]int{}}
	for _, p := range lp.input.Pods {
		if h, ok := lp.held[p.Pod.UID]; ok {
			out.Held[h.Reason]++
			if !already[p.Pod.UID] {
				d.Held = append(d.Held, h)
			}
		}
	}
	d.RetryAfter = fleet.Soonest(d.RetryAfter, lp.retry)
	out.Status, out.Reason, out.Message = lp.condition()
	return out
}

// condition is the LoweringsHeld condition after this sync: its reason is
// the first held pod's, in the order the budgets are given out.
func (lp *limitPlan) condition() (metav1.ConditionStatus, string, string) {
	switch lp.reason {
	case HoldOutsideWindow:
		return metav1.ConditionTrue, v1alpha1.LoweringsReasonOutsideWindow, fmt.Sprintf("%d pod(s)' lowerings held: %s", len(lp.held), lp.closedText())
	case HoldBudget, HoldNamespaceBudget:
		return metav1.ConditionTrue, string(lp.reason), fmt.Sprintf("%d pod(s)' lowerings held: %s", len(lp.held), lp.spentText(lp.reason))
	}
	var parts []string
	switch {
	case len(lp.lim.Windows) == 0:
	case lp.open:
		parts = append(parts, fmt.Sprintf("change window %s is open", lp.which))
	case lp.next.IsZero():
		parts = append(parts, "no change window opens in the next five years")
	default:
		parts = append(parts, fmt.Sprintf("no change window is open; the next opens at %s (%s)", lowering.Stamp(lp.next), lp.which))
	}
	if lp.budget > 0 {
		parts = append(parts, fmt.Sprintf("%d of the %d pod(s) the hourly budget allows lowered within the last hour", len(lp.lowered), lp.budget))
	}
	if lp.nsBudget > 0 {
		parts = append(parts, fmt.Sprintf("%d of the %d pod(s) the namespace's hourly budget allows%s lowered within the last hour", len(lp.ns.All()), lp.nsBudget, lp.ofPods()))
	}
	return metav1.ConditionFalse, v1alpha1.LoweringsReasonAllowed, "no lowering is held: " + strings.Join(parts, "; ")
}

package autoscale_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/limits"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/propertytest"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
)

// TestChangeWindowProperties judges Open against the oracle on 1,000
// generated sets of windows at 100 times each, spread over a year: open or
// not as the oracle says, and when closed, the next opening named is
// after now, open by the oracle, and no second of the way there is (the
// oracle is asked at the second before it and at points between).
func TestChangeWindowProperties(t *testing.T) {
	// 100,000 times judged, about ten seconds under -race on two cores.
	cases := 1000
	switch {
	case testing.Short():
		cases = 200
	case propertytest.Race:
		// make check runs the thousand without -race (propertyCases).
		cases = 200
	}
	seed := propertytest.Seed(t)
	r := rand.New(rand.NewPCG(seed, 13))
	var open, closed int
	for i := range cases {
		caseSeed := r.Uint64()
		cr := rand.New(rand.NewPCG(caseSeed, 14))
		ws := genWindows(cr)
		var api []v1alpha1.ChangeWindow
		for _, w := range ws {
			api = append(api, w.api)
		}
		lim := limitsOf(t, api...)
		for range 100 {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(cr.Int64N(int64(365 * 24 * time.Hour))))
			got, next, _ := lim.Open(now)
			want := openOracle(ws, now)
			if got != want {
				t.Fatalf("case %d (seed %d): windows %+v at %s: open %v, the oracle says %v", i, caseSeed, api, now, got, want)
			}
			if got {
				open++
				continue
			}
			closed++
			if next.IsZero() || !next.After(now) || !openOracle(ws, next) || openOracle(ws, next.Add(-time.Second)) {
				t.Fatalf("case %d (seed %d): windows %+v at %s: next opening %s, which the oracle does not see as the first open second", i, caseSeed, api, now, next)
			}
			for k := range 5 {
				mid := now.Add(next.Sub(now) * time.Duration(k) / 5)
				if openOracle(ws, mid) {
					t.Fatalf("case %d (seed %d): windows %+v at %s: next opening %s, but the oracle sees one open at %s", i, caseSeed, api, now, next, mid)
				}
			}
		}
	}
	t.Logf("%d generated sets of windows (seed %d): %d times judged open, %d closed", cases, seed, open, closed)
	if open < cases*5 || closed < cases*5 {
		t.Errorf("%d open, %d closed: the generator no longer draws both", open, closed)
	}
}

// TestLoweringLimitsProperties runs a workload for days through generated
// change windows and budgets, sync after sync, the resizes sent applied and
// the targets moving up and down, and checks at every sync that:
//   - no lowering is sent while no window is open, judged by an oracle
//     that works the openings out with time.Date, not with the cron
//     library the decision uses;
//   - every raise sent without windows and budget is sent with them, the
//     same, and no pod that wants a raise is held for a window or the
//     budget;
//   - in no rolling hour are more distinct pods lowered than the budget,
//     across a restart that restores the budget's count from what the
//     checkpoint keeps (times rounded up to the second).
func TestLoweringLimitsProperties(t *testing.T) {
	// 250 cases of about 55 syncs each, every sync decided twice (with
	// and without the limits): some 27,000 decisions, under 20 seconds
	// with -race on two cores. The schedules alone are judged in their
	// thousands by TestChangeWindowProperties.
	cases := 250
	switch {
	case testing.Short():
		cases = 60
	case propertytest.Race:
		// make check runs the 250 without -race (propertyCases).
		cases = 50
	}
	stats, _, seed, took := propertytest.RunN(t, cases, 11, runLimitsCase)
	t.Logf("%d generated schedules and budgets (seed %d) in %s: %d syncs, %d lowerings sent (%d in a window), %d raises sent, %d lowerings held outside a window, %d held for the budget, %d restarts",
		cases, seed, took.Round(time.Millisecond), stats["syncs"], stats["lowerings"], stats["loweredInWindow"], stats["raises"], stats["heldWindow"], stats["heldBudget"], stats["restarts"])
	// Each rule must be exercised, or the generator no longer draws what
	// the properties are about.
	for _, stat := range []string{"lowerings", "loweredInWindow", "raises", "heldWindow", "heldBudget", "restarts"} {
		if stats[stat] < cases/5 {
			t.Errorf("%s: %d in %d cases, want at least %d", stat, stats[stat], cases, cases/5)
		}
	}
}

// genWindow is a generated change window the oracle can judge: minute M
// of hour H (never 01 or 02, where DST makes a wall-clock time missing or
// doubled), on every day or a range of weekdays, in a zone.
type genWindow struct {
	minute, hour int
	dows         []time.Weekday // nil: every day
	zone         *time.Location
	duration     time.Duration
	api          v1alpha1.ChangeWindow
}

var limitZones = []string{"UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo", "Australia/Sydney"}

func genWindows(r *rand.Rand) []genWindow {
	var out []genWindow
	for range 1 + r.IntN(3) {
		w := genWindow{minute: r.IntN(60), hour: []int{0, 3, 5, 9, 12, 17, 20, 22, 23}[r.IntN(9)],
			duration: time.Duration(1+r.IntN(8*60)) * time.Minute}
		zone := limitZones[r.IntN(len(limitZones))]
		w.zone, _ = time.LoadLocation(zone)
		dow := "*"
		if r.IntN(2) == 0 {
			a := r.IntN(7)
			b := a + r.IntN(7-a)
			dow = fmt.Sprintf("%d-%d", a, b)
			for d := a; d <= b; d++ {
				w.dows = append(w.dows, time.Weekday(d))
			}
		}
		w.api = window(fmt.Sprintf("%d %d * * %s", w.minute, w.hour, dow), zone, w.duration)
		out = append(out, w)
	}
	return out
}

// openOracle: some opening of some window, on one of the last nine local
// days, is at or before t and less than its duration before it.
func openOracle(ws []genWindow, t time.Time) bool {
	for _, w := range ws {
		local := t.In(w.zone)
		for back := range 9 {
			day := time.Date(local.Year(), local.Month(), local.Day()-back, w.hour, w.minute, 0, 0, w.zone)
			if w.dows != nil && !containsDay(w.dows, day.Weekday()) {
				continue
			}
			if !day.After(t) && t.Sub(day) < w.duration {
				return true
			}
		}
	}
	return false
}

func containsDay(ds []time.Weekday, d time.Weekday) bool {
	for _, x := range ds {
		if x == d {
			return true
		}
	}
	return false
}

func runLimitsCase(seed uint64, stats map[string]int) string {
	r := rand.New(rand.NewPCG(seed, 12))
	n := 2 + r.IntN(8)
	var windows []genWindow
	if r.IntN(4) > 0 {
		windows = genWindows(r)
	}
	sd := &v1alpha1.ScaleDownRules{}
	for _, w := range windows {
		sd.Windows = append(sd.Windows, w.api)
	}
	if r.IntN(4) > 0 {
		if r.IntN(2) == 0 {
			sd.Budget = &v1alpha1.LoweringBudget{Pods: ptrTo(intstr.FromInt32(int32(1 + r.IntN(4))))}
		} else {
			sd.Budget = &v1alpha1.LoweringBudget{Pods: ptrTo(intstr.FromString(fmt.Sprintf("%d%%", 1+r.IntN(60))))}
		}
	}
	if len(sd.Windows) == 0 && sd.Budget == nil {
		sd.Budget = &v1alpha1.LoweringBudget{Pods: ptrTo(intstr.FromInt32(1))}
	}
	maxConc := int32(1 + r.IntN(n))
	spec := &v1alpha1.TailorPolicySpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Behavior: &v1alpha1.Behavior{MaxConcurrentResizes: &maxConc, ScaleDown: sd},
	}
	free := spec.DeepCopy()
	free.Behavior.ScaleDown = nil
	lim, _, err := limits.ConfigOf(spec)
	if err != nil {
		return fmt.Sprintf("windows %+v: %v", sd.Windows, err)
	}
	budget := lim.Budget(n)

	now := time.Date(2026, time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), 0, time.UTC)
	pods := make([]fleet.PodInput, n)
	for i := range pods {
		cpu := fmt.Sprintf("%dm", 200+100*r.IntN(8))
		p := builder.Pod(fmt.Sprintf("web-%d", i)).UID(fmt.Sprintf("web-%d", i)).Node("n1").
			Container(builder.Container("app").Requests(cpu, "256Mi").Limits("4", "512Mi")).Running().Obj()
		pods[i] = fleet.PodInput{Pod: p, WorkingSet: map[string]resource.Quantity{"app": resource.MustParse("100Mi")}}
	}
	retarget := func(i int) {
		pods[i].Targets = map[string]podchange.Target{"app": {CPU: quantity(fmt.Sprintf("%dm", 100+50*r.IntN(30)))}}
	}
	for i := range pods {
		retarget(i)
	}
	var lowered limits.Lowered
	type event struct {
		uid types.UID
		at  time.Time
	}
	var events []event
	for sync := range 30 + r.IntN(50) {
		stats["syncs"]++
		if r.IntN(25) == 0 {
			// A restart: the count comes back as the checkpoint keeps it.
			stats["restarts"]++
			restored := limits.Lowered{}
			for uid, at := range lowered {
				restored[uid] = at.Add(time.Second - 1).Truncate(time.Second)
			}
			lowered = restored
		}
		bound := make([]*corev1.Pod, n)
		for i := range pods {
			bound[i] = pods[i].Pod
		}
		in := func(s *v1alpha1.TailorPolicySpec) autoscale.SyncInput {
			return autoscale.SyncInput{PolicyInput: fleet.PolicyInput{
				Spec: s, Pods: pods, Now: now, MemoryFloorHeadroom: 0.1, Server: resize.Version{Major: 1, Minor: 37},
				Nodes: map[string]*resize.NodeState{"n1": {Allocatable: builder.List("64", "64Gi"), Pods: bound}},
			}, Lowered: lowered}
		}
		d, err := decide(in(spec))
		if err != nil {
			return err.Error()
		}
		base, err := decide(in(free))
		if err != nil {
			return err.Error()
		}
		at := fmt.Sprintf("sync %d at %s (windows %v, budget %d of %d pods, maxConcurrent %d)", sync, now.Format(time.RFC3339), sd.Windows, budget, n, maxConc)
		open := len(windows) == 0 || openOracle(windows, now)
		raises := func(sd autoscale.SyncDecision) map[string]string {
			out := map[string]string{}
			for _, s := range sd.Sends {
				if s.Decision.Raises() {
					out[s.Pod.Name] = sendText(s)
				}
			}
			return out
		}
		got, want := raises(d), raises(base)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Sprintf("%s: raises sent %v, without windows and budget %v", at, got, want)
		}
		stats["raises"] += len(got)
		for _, h := range d.Held {
			if h.Reason != limits.HoldOutsideWindow && h.Reason != limits.HoldBudget {
				continue
			}
			if h.Decision.Raises() {
				return fmt.Sprintf("%s: pod %s wants a raise and is held: %s", at, h.Pod.Name, h.Message)
			}
			if h.Reason == limits.HoldOutsideWindow {
				stats["heldWindow"]++
			} else {
				stats["heldBudget"]++
			}
		}
		for _, s := range d.Sends {
			if !lowers(s.Decision) {
				continue
			}
			if !open {
				return fmt.Sprintf("%s: %s sent with no window open", at, sendText(s))
			}
			stats["lowerings"]++
			if len(windows) > 0 {
				stats["loweredInWindow"]++
			}
			events = append(events, event{s.Pod.UID, now})
			distinct := map[types.UID]bool{}
			for _, e := range events {
				if now.Sub(e.at) < limits.BudgetPeriod {
					distinct[e.uid] = true
				}
			}
			if sd.Budget != nil && len(distinct) > budget {
				return fmt.Sprintf("%s: %d pods lowered within the hour, budget %d", at, len(distinct), budget)
			}
		}
		// The world moves on: what was sent is applied, some of it still
		// in flight at the next sync; targets move.
		lowered = d.Limits.Lowered
		for i := range pods {
			pods[i].InFlight = false
		}
		for _, s := range d.Sends {
			for i := range pods {
				if pods[i].Pod.UID == s.Pod.UID {
					pods[i].Pod, pods[i].LastResize, pods[i].InFlight = s.Plan.AfterPod(), now, r.IntN(4) == 0
				}
			}
		}
		for i := range pods {
			if r.IntN(4) == 0 {
				retarget(i)
			}
		}
		now = now.Add(time.Duration(10+r.IntN(40*60)) * time.Second)
	}
	return ""
}

// TestNamespaceBudgetProperties runs two to four policies of one namespace
// for hours, one sync at a time in a random order, each with or without a
// namespace budget (a count or a percent of the namespace's running pods,
// its own value), some with a budget of their own too, the resizes sent
// applied and the targets moving, and checks at every sync that:
//   - a policy with a namespace budget that lowers a pod not lowered within
//     the hour leaves no more distinct pods of the namespace lowered
//     within the last hour, by all the policies, than its budget, judged
//     by an oracle that keeps every lowering sent and works the budget out
//     with math.Ceil;
//   - a policy's own budget holds as well;
//   - every raise sent without windows and budgets is sent with them.
//
// Each policy is given the others' lowerings as their checkpoints keep
// them (times rounded up to the second), and a restart brings every
// policy's own count back from its checkpoint.
func TestNamespaceBudgetProperties(t *testing.T) {
	// 150 cases of about 90 syncs, each decided twice: under 15 seconds
	// with -race on two cores.
	cases := 150
	switch {
	case testing.Short():
		cases = 40
	case propertytest.Race:
		cases = 40
	}
	stats, _, seed, took := propertytest.RunN(t, cases, 21, runNamespaceCase)
	t.Logf("%d generated namespaces (seed %d) in %s: %d syncs, %d lowerings sent (%d by a policy with a namespace budget, %d by one without), %d raises sent, %d held for a namespace budget, %d for a policy's own, %d restarts",
		cases, seed, took.Round(time.Millisecond), stats["syncs"], stats["lowerings"], stats["loweredBudgeted"], stats["loweredFree"], stats["raises"],
		stats["heldNamespace"], stats["heldBudget"], stats["restarts"])
	for _, stat := range []string{"loweredBudgeted", "loweredFree", "raises", "heldNamespace", "heldBudget", "restarts"} {
		if stats[stat] < cases/5 {
			t.Errorf("%s: %d in %d cases, want at least %d", stat, stats[stat], cases, cases/5)
		}
	}
}

// simPolicy is one policy of a generated namespace.
type simPolicy struct {
	name    string
	spec    *v1alpha1.TailorPolicySpec
	free    *v1alpha1.TailorPolicySpec
	pods    []fleet.PodInput
	lowered limits.Lowered
	// nsCount and nsPercent are its namespace budget (both 0: none), and
	// own its own budget in pods (0: none).
	nsCount, nsPercent, own int
}

// checkpointOf is a count as the checkpoint keeps it: times rounded up to
// the second.
func checkpointOf(l limits.Lowered) limits.Lowered {
	out := limits.Lowered{}
	for uid, at := range l {
		out[uid] = at.Add(time.Second - 1).Truncate(time.Second)
	}
	return out
}

func runNamespaceCase(seed uint64, stats map[string]int) string {
	r := rand.New(rand.NewPCG(seed, 22))
	policies := make([]*simPolicy, 2+r.IntN(3))
	running := r.IntN(20) // pods of the namespace no policy sizes
	for k := range policies {
		p := &simPolicy{name: fmt.Sprintf("p%d", k)}
		budget := &v1alpha1.LoweringBudget{}
		if k == 0 || r.IntN(3) > 0 {
			if r.IntN(2) == 0 {
				p.nsCount = 1 + r.IntN(5)
				budget.NamespacePods = ptrTo(intstr.FromInt32(int32(p.nsCount)))
			} else {
				p.nsPercent = 1 + r.IntN(40)
				budget.NamespacePods = ptrTo(intstr.FromString(fmt.Sprintf("%d%%", p.nsPercent)))
			}
		}
		if r.IntN(3) == 0 {
			p.own = 1 + r.IntN(3)
			budget.Pods = ptrTo(intstr.FromInt32(int32(p.own)))
		}
		sd := &v1alpha1.ScaleDownRules{}
		if budget.Pods != nil || budget.NamespacePods != nil {
			sd.Budget = budget
		}
		n := 2 + r.IntN(5)
		maxConc := int32(1 + r.IntN(n))
		p.spec = &v1alpha1.TailorPolicySpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": p.name}},
			Behavior: &v1alpha1.Behavior{MaxConcurrentResizes: &maxConc, ScaleDown: sd},
		}
		p.free = p.spec.DeepCopy()
		p.free.Behavior.ScaleDown = nil
		for i := range n {
			name := fmt.Sprintf("%s-%d", p.name, i)
			pod := builder.Pod(name).UID(name).Node("n1").
				Container(builder.Container("app").Requests(fmt.Sprintf("%dm", 200+100*r.IntN(8)), "256Mi").Limits("4", "512Mi")).Running().Obj()
			p.pods = append(p.pods, fleet.PodInput{Pod: pod, WorkingSet: map[string]resource.Quantity{"app": resource.MustParse("100Mi")}})
		}
		running += n
		policies[k] = p
	}
	retarget := func(pi *fleet.PodInput) {
		pi.Targets = map[string]podchange.Target{"app": {CPU: quantity(fmt.Sprintf("%dm", 100+50*r.IntN(30)))}}
	}
	for _, p := range policies {
		for i := range p.pods {
			retarget(&p.pods[i])
		}
	}
	// nsBudget is the oracle's namespace budget of p.
	nsBudget := func(p *simPolicy) int {
		if p.nsCount > 0 {
			return p.nsCount
		}
		return max(1, min(int(math.Ceil(float64(p.nsPercent)*float64(running)/100)), limits.MaxBudgetPods))
	}
	type event struct {
		policy string
		uid    types.UID
		at     time.Time
	}
	var events []event
	// distinct are the pods lowered within the hour before now, of the
	// policy named (all of them: "").
	distinct := func(now time.Time, policy string) map[types.UID]bool {
		out := map[types.UID]bool{}
		for _, e := range events {
			if now.Sub(e.at) < time.Hour && !e.at.After(now) && (policy == "" || e.policy == policy) {
				out[e.uid] = true
			}
		}
		return out
	}
	now := time.Date(2026, time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), 0, time.UTC)
	for sync := range 60 + r.IntN(60) {
		stats["syncs"]++
		if r.IntN(30) == 0 {
			stats["restarts"]++
			for _, p := range policies {
				p.lowered = checkpointOf(p.lowered)
			}
		}
		p := policies[r.IntN(len(policies))]
		var bound []*corev1.Pod
		for _, q := range policies {
			for _, pi := range q.pods {
				bound = append(bound, pi.Pod)
			}
		}
		ns := limits.NamespaceLowerings{Policy: p.name, ByPolicy: limits.LoweredBy{}, Pods: running}
		for _, q := range policies {
			ns.ByPolicy.Add(q.name, checkpointOf(q.lowered))
		}
		in := func(s *v1alpha1.TailorPolicySpec) autoscale.SyncInput {
			return autoscale.SyncInput{PolicyInput: fleet.PolicyInput{
				Spec: s, Pods: p.pods, Now: now, MemoryFloorHeadroom: 0.1, Server: resize.Version{Major: 1, Minor: 37},
				Nodes: map[string]*resize.NodeState{"n1": {Allocatable: builder.List("256", "256Gi"), Pods: bound}},
			}, Lowered: p.lowered, Namespace: ns, CountLowerings: true}
		}
		d, err := decide(in(p.spec))
		if err != nil {
			return err.Error()
		}
		base, err := decide(in(p.free))
		if err != nil {
			return err.Error()
		}
		at := fmt.Sprintf("sync %d of %s at %s (namespace budget %d, %d%% of %d running; own %d)", sync, p.name, now.Format(time.RFC3339), p.nsCount, p.nsPercent, running, p.own)
		raises := func(sd autoscale.SyncDecision) map[string]string {
			out := map[string]string{}
			for _, s := range sd.Sends {
				if s.Decision.Raises() {
					out[s.Pod.Name] = sendText(s)
				}
			}
			return out
		}
		if got, want := raises(d), raises(base); fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Sprintf("%s: raises sent %v, without budgets %v", at, got, want)
		}
		stats["raises"] += len(raises(d))
		for _, h := range d.Held {
			switch h.Reason {
			case limits.HoldNamespaceBudget:
				stats["heldNamespace"]++
			case limits.HoldBudget:
				stats["heldBudget"]++
			default:
				continue
			}
			if h.Decision.Raises() {
				return fmt.Sprintf("%s: pod %s wants a raise and is held: %s", at, h.Pod.Name, h.Message)
			}
		}
		before := distinct(now, "")
		newPods := 0
		for _, s := range d.Sends {
			if !lowers(s.Decision) {
				continue
			}
			stats["lowerings"]++
			if p.nsCount+p.nsPercent > 0 {
				stats["loweredBudgeted"]++
			} else {
				stats["loweredFree"]++
			}
			if !before[s.Pod.UID] {
				newPods++
			}
			events = append(events, event{p.name, s.Pod.UID, now})
		}
		if b := nsBudget(p); p.nsCount+p.nsPercent > 0 && newPods > 0 && len(distinct(now, "")) > b {
			return fmt.Sprintf("%s: %d pods of the namespace lowered within the hour (%d by this sync), namespace budget %d", at, len(distinct(now, "")), newPods, b)
		}
		if p.own > 0 && len(distinct(now, p.name)) > p.own {
			return fmt.Sprintf("%s: %d of its pods lowered within the hour, its own budget %d", at, len(distinct(now, p.name)), p.own)
		}
		// The world moves on, as in runLimitsCase.
		p.lowered = d.Limits.Lowered
		for i := range p.pods {
			p.pods[i].InFlight = false
		}
		for _, s := range d.Sends {
			for i := range p.pods {
				if p.pods[i].Pod.UID == s.Pod.UID {
					p.pods[i].Pod, p.pods[i].LastResize, p.pods[i].InFlight = s.Plan.AfterPod(), now, r.IntN(4) == 0
				}
			}
		}
		for _, q := range policies {
			for i := range q.pods {
				if r.IntN(4) == 0 {
					retarget(&q.pods[i])
				}
			}
		}
		now = now.Add(time.Duration(10+r.IntN(20*60)) * time.Second)
	}
	return ""
}

func lowers(d podchange.Decision) bool {
	for _, ch := range d.All() {
		if ch.RequestNow.Cmp(ch.RequestBefore) < 0 || (ch.LimitNow != nil && ch.LimitBefore != nil && ch.LimitNow.Cmp(*ch.LimitBefore) < 0) {
			return true
		}
	}
	return false
}

func sendText(s autoscale.Send) string {
	var parts []string
	for _, ch := range s.Decision.All() {
		parts = append(parts, fmt.Sprintf("%s %s %s -> %s", ch.Container, ch.Resource, ch.RequestBefore.String(), ch.RequestNow.String()))
	}
	return s.Pod.Name + " " + strings.Join(parts, ", ")
}

package canary_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/canary"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
)

// canaryNow is the time of every canary case.
var canaryNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

const canaryWindow = 10 * time.Minute

// canaryWorld is three pods of one workload (web-0..2, app at 500m/256Mi
// requested, 1/512Mi limits, Ready) on a big node, each wanting its CPU
// lowered to 200m, under a policy with a canary of the defaults and
// maxConcurrentResizes 3: what holds a pod back is the canary, not the
// pace.
type canaryWorld struct {
	spec  *v1alpha1.TailorPolicySpec
	pods  []fleet.PodInput
	state canary.State
	now   time.Time
	// answers are the query guardrails' answers the sync is given.
	answers map[string]canary.GuardrailAnswer
}

func newCanaryWorld() *canaryWorld {
	w := &canaryWorld{now: canaryNow, spec: &v1alpha1.TailorPolicySpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Behavior: &v1alpha1.Behavior{
			MaxConcurrentResizes: ptrTo(int32(3)),
			ScaleDown:            &v1alpha1.ScaleDownRules{Canary: &v1alpha1.Canary{}},
		},
	}}
	for i := range 3 {
		w.pods = append(w.pods, fleet.PodInput{
			Pod:        canaryPod(fmt.Sprintf("web-%d", i), "500m", "1"),
			Targets:    map[string]podchange.Target{"app": {CPU: quantity("200m")}},
			WorkingSet: map[string]resource.Quantity{"app": resource.MustParse("100Mi")},
		})
	}
	return w
}

func ptrTo[T any](v T) *T { return &v }

func quantity(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

// canaryPod is a Ready, running pod with container app at cpu request and
// limit (memory 256Mi/512Mi); its UID is its name.
func canaryPod(name, cpu, cpuLimit string) *corev1.Pod {
	p := builder.Pod(name).UID(name).Node("n1").Container(builder.Container("app").Requests(cpu, "256Mi").Limits(cpuLimit, "512Mi")).Running().Obj()
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return p
}

// lowered makes pod i the canary lowered at `at` to 200m/400m, as the
// state a sync that lowered it left.
func (w *canaryWorld) lowered(i int, at time.Time) {
	before := w.pods[i].Pod
	w.pods[i].Pod = canaryPod(before.Name, "200m", "400m")
	w.pods[i].LastResize = at
	w.state.Pods = append(w.state.Pods, canary.Pod{
		UID: before.UID, Name: before.Name, LoweredAt: at, Ready: true, Restarts: map[string]int32{"app": 0},
		Before: canary.Values{"app": {Requests: builder.List("500m", "256Mi"), Limits: builder.List("1", "512Mi")}},
	})
}

// decided is a sync's decision on the running pods with the canary as its
// gate: DecidePolicy's decision as the gate settles it, and the outcome.
type decided struct {
	fleet.PolicyDecision
	Canary canary.Outcome
}

// decide decides a sync of the world as DecideSync does with no other
// gate: its input through the canary's gate, DecidePolicy on what it lets
// through, and the gate settled on that.
func (w *canaryWorld) decide(t *testing.T) decided {
	t.Helper()
	var bound []*corev1.Pod
	for _, p := range w.pods {
		bound = append(bound, p.Pod)
	}
	in := fleet.PolicyInput{
		Spec: w.spec, Pods: w.pods, Now: w.now, MemoryFloorHeadroom: 0.1,
		Server: resize.Version{Major: 1, Minor: 37},
		Nodes:  map[string]*resize.NodeState{"n1": {Allocatable: builder.List("16", "64Gi"), Pods: bound}},
	}
	through, settle, err := canary.Gate{State: w.state, Answers: w.answers}.Pass(in)
	if err != nil {
		t.Fatal(err)
	}
	d, err := fleet.DecidePolicy(through)
	if err != nil {
		t.Fatal(err)
	}
	return decided{Canary: settle(&d), PolicyDecision: d}
}

// sends says each resize sent: "web-0 app cpu 500m -> 200m".
func sends(d decided) []string {
	var out []string
	for _, s := range d.Resizes {
		var parts []string
		for _, ch := range s.Decision.All() {
			parts = append(parts, fmt.Sprintf("%s %s %s -> %s", ch.Container, ch.Resource, ch.RequestBefore.String(), ch.RequestNow.String()))
		}
		out = append(out, s.Pod.Name+" "+strings.Join(parts, ", "))
	}
	return out
}

// holds says each pod held, and why: "web-1 Canary".
func holds(d decided) []string {
	var out []string
	for _, h := range d.Held {
		out = append(out, h.Pod.Name+" "+string(h.Reason))
	}
	return out
}

func events(d decided) []string {
	var out []string
	for _, e := range d.Canary.Events {
		who := "policy"
		if e.Pod != nil {
			who = e.Pod.Name
		}
		out = append(out, who+" "+e.Reason+" "+string(e.Guardrail))
	}
	return out
}

func canaryNames(pods []canary.Pod) []string {
	var out []string
	for _, c := range pods {
		out = append(out, c.Name)
	}
	return out
}

// TestCanaryStartsOnOnePodAndHoldsTheOthers: with no canary running, the
// first pod by name is lowered, the others' lowerings wait, and the state
// records what the canary had and when it was lowered.
func TestCanaryStartsOnOnePodAndHoldsTheOthers(t *testing.T) {
	cases := map[string]struct {
		pods       *intstr.IntOrString
		maxConc    int32
		wantSends  []string
		wantHeld   []string
		wantCanary []string
	}{
		"one pod, the first by name": {
			wantSends:  []string{"web-0 app cpu 500m -> 200m"},
			wantHeld:   []string{"web-1 Canary", "web-2 Canary"},
			wantCanary: []string{"web-0"},
		},
		"a percent, rounded up": {
			pods:       ptrTo(intstr.FromString("50%")),
			wantSends:  []string{"web-0 app cpu 500m -> 200m", "web-1 app cpu 500m -> 200m"},
			wantHeld:   []string{"web-2 Canary"},
			wantCanary: []string{"web-0", "web-1"},
		},
		"two pods with one resize at a time: the second joins later": {
			pods: ptrTo(intstr.FromInt32(2)), maxConc: 1,
			wantSends:  []string{"web-0 app cpu 500m -> 200m"},
			wantHeld:   []string{"web-1 MaxConcurrentResizes", "web-2 Canary"},
			wantCanary: []string{"web-0"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newCanaryWorld()
			w.spec.Behavior.ScaleDown.Canary.Pods = tc.pods
			if tc.maxConc > 0 {
				w.spec.Behavior.MaxConcurrentResizes = &tc.maxConc
			}
			d := w.decide(t)
			if diff := cmp.Diff(tc.wantSends, sends(d)); diff != "" {
				t.Errorf("sends (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantHeld, holds(d)); diff != "" {
				t.Errorf("held (-want,+got):\n%s", diff)
			}
			st := d.Canary.State
			if diff := cmp.Diff(tc.wantCanary, canaryNames(st.Pods)); diff != "" {
				t.Errorf("canary pods (-want,+got):\n%s", diff)
			}
			c := st.Pods[0]
			if !c.LoweredAt.Equal(w.now) || !c.Ready || c.Restarts["app"] != 0 || c.Before.String() != "app cpu 500m/1, memory 256Mi/512Mi" {
				t.Errorf("canary %+v: want lowered now, Ready, 0 restarts, before app cpu 500m/1, memory 256Mi/512Mi", c)
			}
			if d.Canary.Status != metav1.ConditionTrue || d.Canary.Reason != v1alpha1.CanaryReasonWatching {
				t.Errorf("condition %s %s: %s, want True Watching", d.Canary.Status, d.Canary.Reason, d.Canary.Message)
			}
			if len(d.Canary.Events) != len(tc.wantCanary) || d.Canary.Events[0].Reason != canary.EventStarted {
				t.Errorf("events %v, want one CanaryStarted per canary pod", events(d))
			}
			if d.RetryAfter != canaryWindow {
				t.Errorf("retry after %s, want the window, %s", d.RetryAfter, canaryWindow)
			}
		})
	}
}

// TestCanaryWindow: while the canary is watched the others wait (and the
// canary is not lowered further); once its window passed with no guardrail
// tripped it is promoted and the others follow at once, as
// maxConcurrentResizes allows; a canary whose resize is still being
// applied is not promoted.
func TestCanaryWindow(t *testing.T) {
	cases := map[string]struct {
		since     time.Duration
		maxConc   int32
		inFlight  bool
		further   bool
		wantSends []string
		wantHeld  []string
		wantRetry time.Duration
		wantCond  string
		promoted  bool
	}{
		"half way: the others wait": {
			since: canaryWindow / 2, wantHeld: []string{"web-1 Canary", "web-2 Canary"}, wantRetry: canaryWindow / 2, wantCond: v1alpha1.CanaryReasonWatching,
		},
		"half way: the canary is not lowered further": {
			since: canaryWindow / 2, further: true,
			wantHeld: []string{"web-0 Canary", "web-1 Canary", "web-2 Canary"}, wantRetry: canaryWindow / 2, wantCond: v1alpha1.CanaryReasonWatching,
		},
		"window passed: promoted, the others follow": {
			since:     canaryWindow,
			wantSends: []string{"web-1 app cpu 500m -> 200m", "web-2 app cpu 500m -> 200m"},
			wantCond:  v1alpha1.CanaryReasonPromoted, promoted: true,
		},
		"window passed, one resize at a time": {
			since: canaryWindow, maxConc: 1,
			wantSends: []string{"web-1 app cpu 500m -> 200m"}, wantHeld: []string{"web-2 MaxConcurrentResizes"},
			wantCond: v1alpha1.CanaryReasonPromoted, promoted: true,
		},
		"window passed, canary's resize not applied yet": {
			since: canaryWindow, inFlight: true,
			wantHeld: []string{"web-1 Canary", "web-2 Canary"}, wantCond: v1alpha1.CanaryReasonWatching,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newCanaryWorld()
			if tc.maxConc > 0 {
				w.spec.Behavior.MaxConcurrentResizes = &tc.maxConc
			}
			w.lowered(0, w.now.Add(-tc.since))
			w.pods[0].InFlight = tc.inFlight
			if tc.further {
				w.pods[0].Targets = map[string]podchange.Target{"app": {CPU: quantity("100m")}}
			}
			d := w.decide(t)
			if diff := cmp.Diff(tc.wantSends, sends(d)); diff != "" {
				t.Errorf("sends (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantHeld, holds(d)); diff != "" {
				t.Errorf("held (-want,+got):\n%s", diff)
			}
			if tc.wantRetry > 0 && d.RetryAfter != tc.wantRetry {
				t.Errorf("retry after %s, want %s", d.RetryAfter, tc.wantRetry)
			}
			if d.Canary.Reason != tc.wantCond {
				t.Errorf("condition %s: %s, want %s", d.Canary.Reason, d.Canary.Message, tc.wantCond)
			}
			st := d.Canary.State
			if tc.promoted {
				if len(st.Pods) != 0 || st.Proven.String() != "app cpu 200m/400m, memory 256Mi/512Mi" || st.Trips != 0 {
					t.Errorf("state after promotion: pods %v, proven %s, trips %d; want none, app cpu 200m/400m, memory 256Mi/512Mi, 0", canaryNames(st.Pods), st.Proven, st.Trips)
				}
				if diff := cmp.Diff([]string{"policy CanaryPromoted "}, events(d)); diff != "" {
					t.Errorf("events (-want,+got):\n%s", diff)
				}
			} else if diff := cmp.Diff([]string{"web-0"}, canaryNames(st.Pods)); diff != "" {
				t.Errorf("canary pods (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestCanaryGuardrails: each guardrail, tripped during the window, raises
// the canary back in place at once to what it had and holds the others'
// lowerings for the backoff; what happened before the lowering, or a
// guardrail turned off, trips nothing.
func TestCanaryGuardrails(t *testing.T) {
	restart := func(reason string, exit int32, at time.Duration) func(*fleet.PodInput) {
		return func(p *fleet.PodInput) {
			cs := &p.Pod.Status.ContainerStatuses[0]
			cs.RestartCount++
			cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				Reason: reason, ExitCode: exit, FinishedAt: metav1.NewTime(canaryNow.Add(at))}}
		}
	}
	cases := map[string]struct {
		mutate     func(*fleet.PodInput)
		guardrails *v1alpha1.CanaryGuardrails
		// restartsBefore is the restart count when the canary was lowered.
		restartsBefore int32
		wantGuardrail  canary.Guardrail
		wantWhat       string
	}{
		"OOM kill": {
			mutate: restart("OOMKilled", 137, -time.Minute), wantGuardrail: canary.GuardrailOOMKill,
			wantWhat: "container app OOM-killed at 2026-11-21T11:59:00Z under its 512Mi memory limit",
		},
		"restart": {
			mutate: restart("Error", 1, -time.Minute), wantGuardrail: canary.GuardrailRestart,
			wantWhat: "container app restart count 0 -> 1",
		},
		"OOM kill with its guardrail off is still a restart": {
			mutate: restart("OOMKilled", 137, -time.Minute), guardrails: &v1alpha1.CanaryGuardrails{OOMKill: ptrTo(false)},
			wantGuardrail: canary.GuardrailRestart, wantWhat: "container app restart count 0 -> 1",
		},
		"readiness lost": {
			mutate: func(p *fleet.PodInput) {
				p.Pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"}}
			},
			wantGuardrail: canary.GuardrailReadiness, wantWhat: "pod no longer Ready (ContainersNotReady)",
		},
		"CPU throttled above the threshold": {
			mutate:        func(p *fleet.PodInput) { p.Throttled = map[string]float64{"app": 0.45} },
			wantGuardrail: canary.GuardrailCPUThrottling, wantWhat: "container app throttled in 45% of its CFS periods, above 20%",
		},
		"working set within the margin of the memory limit": {
			mutate: func(p *fleet.PodInput) {
				p.WorkingSet = map[string]resource.Quantity{"app": resource.MustParse("490Mi")}
			},
			wantGuardrail: canary.GuardrailMemoryNearLimit, wantWhat: "container app working set 490Mi within 5% of the 512Mi memory limit",
		},
		"a custom margin": {
			mutate: func(p *fleet.PodInput) {
				p.WorkingSet = map[string]resource.Quantity{"app": resource.MustParse("470Mi")}
			},
			guardrails:    &v1alpha1.CanaryGuardrails{MemoryMarginPercent: ptrTo(int32(10))},
			wantGuardrail: canary.GuardrailMemoryNearLimit, wantWhat: "container app working set 470Mi within 10% of the 512Mi memory limit",
		},
		// The kubelet would not lower it: it never ran at the new values,
		// so its window proved nothing, whichever guardrails are on.
		"the lowering Infeasible": {
			mutate:        func(p *fleet.PodInput) { p.ResizeRefused = "Infeasible: Node didn't have enough capacity" },
			guardrails:    &v1alpha1.CanaryGuardrails{OOMKill: ptrTo(false), Restart: ptrTo(false), Readiness: ptrTo(false), CPUThrottling: ptrTo(false), MemoryNearLimit: ptrTo(false)},
			wantGuardrail: canary.GuardrailResizeRefused,
			wantWhat:      "the kubelet did not apply the lowering (Infeasible: Node didn't have enough capacity)",
		},
		"throttled below the threshold": {
			mutate: func(p *fleet.PodInput) { p.Throttled = map[string]float64{"app": 0.15} },
		},
		"working set outside the margin": {
			mutate: func(p *fleet.PodInput) {
				p.WorkingSet = map[string]resource.Quantity{"app": resource.MustParse("480Mi")}
			},
		},
		"a restart before the lowering, counted then": {
			mutate: restart("Error", 1, -20*time.Minute), restartsBefore: 1,
		},
		"restart guardrail off": {
			mutate: restart("Error", 1, -time.Minute), guardrails: &v1alpha1.CanaryGuardrails{Restart: ptrTo(false)},
		},
		"readiness guardrail off": {
			mutate: func(p *fleet.PodInput) {
				p.Pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
			},
			guardrails: &v1alpha1.CanaryGuardrails{Readiness: ptrTo(false)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newCanaryWorld()
			w.spec.Behavior.ScaleDown.Canary.Guardrails = tc.guardrails
			w.lowered(0, w.now.Add(-2*time.Minute))
			w.state.Pods[0].Restarts["app"] = tc.restartsBefore
			tc.mutate(&w.pods[0])
			d := w.decide(t)
			st := d.Canary.State
			if tc.wantGuardrail == "" {
				if len(d.Resizes) != 0 || len(st.Pods) != 1 || !st.HoldUntil.IsZero() {
					t.Errorf("tripped: sends %v, canary %v, hold until %s; want still watched", sends(d), canaryNames(st.Pods), st.HoldUntil)
				}
				return
			}
			if diff := cmp.Diff([]string{"web-0 app cpu 200m -> 500m"}, sends(d)); diff != "" {
				t.Fatalf("sends (-want,+got):\n%s", diff)
			}
			if lim := d.Resizes[0].Decision.Changes[0].LimitNow; lim == nil || lim.String() != "1" {
				t.Errorf("rollback limit %v, want 1 as before", lim)
			}
			if diff := cmp.Diff([]string{"web-1 CanaryBackoff", "web-2 CanaryBackoff"}, holds(d)); diff != "" {
				t.Errorf("held (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"web-0 CanaryRolledBack " + string(tc.wantGuardrail)}, events(d)); diff != "" {
				t.Fatalf("events (-want,+got):\n%s", diff)
			}
			if got := d.Canary.Events[0].Message; !strings.HasPrefix(got, tc.wantWhat) {
				t.Errorf("event %q, want it to say %q", got, tc.wantWhat)
			}
			if len(st.Pods) != 0 || st.Trips != 1 || !st.HoldUntil.Equal(w.now.Add(time.Hour)) || st.Proven.String() != "app cpu 500m/1, memory 256Mi/512Mi" {
				t.Errorf("state: pods %v, trips %d, hold until %s, proven %s; want none, 1, +1h, what the canary had", canaryNames(st.Pods), st.Trips, st.HoldUntil, st.Proven)
			}
			if d.Canary.Status != metav1.ConditionTrue || d.Canary.Reason != v1alpha1.CanaryReasonRolledBack || !strings.Contains(d.Canary.Message, tc.wantWhat) {
				t.Errorf("condition %s %s: %q, want True RolledBack saying %q", d.Canary.Status, d.Canary.Reason, d.Canary.Message, tc.wantWhat)
			}
		})
	}
}

// TestCanaryRollbackIsNeverHeld: neither minResizeInterval (the canary was
// resized a second ago) nor maxConcurrentResizes (another pod's resize is
// in flight) holds a rollback.
func TestCanaryRollbackIsNeverHeld(t *testing.T) {
	w := newCanaryWorld()
	w.spec.Behavior.MaxConcurrentResizes = ptrTo(int32(1))
	w.spec.Behavior.MinResizeInterval = &metav1.Duration{Duration: time.Hour}
	w.lowered(0, w.now.Add(-time.Second))
	w.pods[1].InFlight = true
	w.pods[0].Throttled = map[string]float64{"app": 0.9}
	d := w.decide(t)
	if diff := cmp.Diff([]string{"web-0 app cpu 200m -> 500m"}, sends(d)); diff != "" {
		t.Errorf("sends (-want,+got):\n%s", diff)
	}
}

// TestCanaryBackoffDoubles: each rollback without a promotion in between
// holds twice as long as the last, up to the cap; a promotion starts over.
func TestCanaryBackoffDoubles(t *testing.T) {
	cfg, _ := canary.ConfigOf(&v1alpha1.TailorPolicySpec{Behavior: &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownRules{Canary: &v1alpha1.Canary{
		Backoff: &v1alpha1.CanaryBackoff{Initial: &metav1.Duration{Duration: 30 * time.Minute}, Max: &metav1.Duration{Duration: 6 * time.Hour}},
	}}}})
	var got []time.Duration
	for trips := int32(1); trips <= 6; trips++ {
		got = append(got, cfg.Backoff(trips))
	}
	want := []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour, 6 * time.Hour, 6 * time.Hour}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("backoffs (-want,+got):\n%s", diff)
	}

	// Through the decision: a second trip holds for 2h.
	w := newCanaryWorld()
	w.state.Trips = 1
	w.lowered(0, w.now.Add(-time.Minute))
	w.pods[0].Throttled = map[string]float64{"app": 0.9}
	st := w.decide(t).Canary.State
	if st.Trips != 2 || !st.HoldUntil.Equal(w.now.Add(2*time.Hour)) {
		t.Errorf("second trip: trips %d, hold until %s; want 2, +2h", st.Trips, st.HoldUntil.Sub(w.now))
	}
}

// TestCanaryHoldKeepsWhatWasLearnt: a rollback takes back what an earlier
// canary proved below what the canary pods had; during the backoff no
// lowering goes out, raises do, and new pods are not sized below what the
// canary was raised back to (the same lowering is not proposed again).
// Once the hold is over a new canary starts, and a trip doubles the
// backoff.
func TestCanaryHoldKeepsWhatWasLearnt(t *testing.T) {
	w := newCanaryWorld()
	// A canary proved 200m before; these pods came back to 500m since (a
	// rollout at the template's size), and the canary lowering web-0 to
	// 200m again trips.
	w.state.Proven = canary.Values{"app": {Requests: builder.List("200m", "128Mi"), Limits: builder.List("400m", "256Mi")}}
	w.state.LastResult = v1alpha1.CanaryReasonPromoted
	w.lowered(0, w.now.Add(-time.Minute))
	w.pods[0].Throttled = map[string]float64{"app": 0.5}
	d := w.decide(t)
	if diff := cmp.Diff([]string{"web-0 app cpu 200m -> 500m"}, sends(d)); diff != "" {
		t.Fatalf("the trip's sends (-want,+got):\n%s", diff)
	}
	w.state = d.Canary.State
	if got := w.state.Proven.String(); got != "app cpu 500m/1, memory 256Mi/512Mi" {
		t.Errorf("proven after the rollback: %s, want what the canary had", got)
	}
	w.pods[0] = fleet.PodInput{Pod: canaryPod("web-0", "500m", "1"), Targets: w.pods[1].Targets, LastResize: w.now}

	// Half an hour into the hour's hold. web-2 wants more memory: a raise,
	// never held.
	w.now = w.now.Add(30 * time.Minute)
	w.pods[2].Targets = map[string]podchange.Target{"app": {CPU: quantity("200m"), Memory: quantity("400Mi")}}
	d = w.decide(t)
	if diff := cmp.Diff([]string{"web-2 app memory 256Mi -> 400Mi"}, sends(d)); diff != "" {
		t.Errorf("sends during the hold (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"web-0 CanaryBackoff", "web-1 CanaryBackoff"}, holds(d)); diff != "" {
		t.Errorf("held during the hold (-want,+got):\n%s", diff)
	}
	if d.RetryAfter != 30*time.Minute || d.Canary.Reason != v1alpha1.CanaryReasonRolledBack {
		t.Errorf("retry after %s, condition %s; want the hold's end, RolledBack", d.RetryAfter, d.Canary.Reason)
	}
	var pods []*corev1.Pod
	for _, p := range w.pods {
		pods = append(pods, p.Pod)
	}
	rec := &v1alpha1.Recommendation{ContainerRecommendations: []v1alpha1.RecommendedContainerResources{
		{ContainerName: "app", Target: builder.List("200m", "128Mi")},
	}}
	got := canary.FloorRecommendation(rec, canary.Floor(d.Canary.State, pods)).ContainerRecommendations[0].Target
	if cpu, mem := got[corev1.ResourceCPU], got[corev1.ResourceMemory]; cpu.String() != "500m" || mem.String() != "256Mi" {
		t.Errorf("recommendation for new pods during the hold: %v, want the rolled-back 500m and 256Mi", got)
	}
	if cpu := rec.ContainerRecommendations[0].Target[corev1.ResourceCPU]; cpu.String() != "200m" {
		t.Errorf("FloorRecommendation changed its argument: %s", cpu.String())
	}

	// The hold is over: a new canary.
	w.now = w.now.Add(30 * time.Minute)
	w.pods[2].Targets = map[string]podchange.Target{"app": {CPU: quantity("200m")}}
	d = w.decide(t)
	if diff := cmp.Diff([]string{"web-0 app cpu 500m -> 200m"}, sends(d)); diff != "" {
		t.Errorf("sends after the hold (-want,+got):\n%s", diff)
	}
	if st := d.Canary.State; st.Trips != 1 || !st.HoldUntil.IsZero() {
		t.Errorf("state after the hold: trips %d, hold until %s; want the trip kept, the hold gone", st.Trips, st.HoldUntil)
	}
}

// TestCanaryRaisesNeverWait: while the canary is watched, a pod that wants
// a raise gets it, and a pod that wants a raise of one resource and a
// lowering of another gets the raise alone.
func TestCanaryRaisesNeverWait(t *testing.T) {
	w := newCanaryWorld()
	w.lowered(0, w.now.Add(-time.Minute))
	w.pods[1].Targets = map[string]podchange.Target{"app": {CPU: quantity("800m")}}
	w.pods[2].Targets = map[string]podchange.Target{"app": {CPU: quantity("800m"), Memory: quantity("128Mi")}}
	d := w.decide(t)
	want := []string{"web-1 app cpu 500m -> 800m", "web-2 app cpu 500m -> 800m"}
	if diff := cmp.Diff(want, sends(d)); diff != "" {
		t.Errorf("sends (-want,+got):\n%s", diff)
	}
}

// TestCanaryProvenValues: after a promotion, a lowering down to what the
// canary proved needs no canary; one below it starts another, and the
// rest wait for it.
func TestCanaryProvenValues(t *testing.T) {
	w := newCanaryWorld()
	w.state.Proven = canary.Values{"app": {Requests: builder.List("200m", "256Mi"), Limits: builder.List("400m", "512Mi")}}
	w.state.LastResult = v1alpha1.CanaryReasonPromoted
	w.pods[0] = fleet.PodInput{Pod: canaryPod("web-0", "200m", "400m"), Targets: map[string]podchange.Target{"app": {CPU: quantity("100m")}}}
	d := w.decide(t)
	want := []string{"web-0 app cpu 200m -> 100m", "web-1 app cpu 500m -> 200m", "web-2 app cpu 500m -> 200m"}
	if diff := cmp.Diff(want, sends(d)); diff != "" {
		t.Errorf("sends (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"web-0"}, canaryNames(d.Canary.State.Pods)); diff != "" {
		t.Errorf("canary pods (-want,+got):\n%s", diff)
	}
}

// TestCanaryRevertSentUntilSeen: a rollback whose pod does not show it
// (its send failed, or the manager stopped before it) is sent again, not
// held; once the pod shows it, it is forgotten.
func TestCanaryRevertSentUntilSeen(t *testing.T) {
	w := newCanaryWorld()
	w.lowered(0, w.now.Add(-time.Minute))
	w.state.Revert, w.state.Pods = w.state.Pods, nil
	w.state.HoldUntil = w.now.Add(time.Hour)
	d := w.decide(t)
	if diff := cmp.Diff([]string{"web-0 app cpu 200m -> 500m"}, sends(d)); diff != "" {
		t.Errorf("sends (-want,+got):\n%s", diff)
	}
	w.pods[0].Pod = canaryPod("web-0", "500m", "1")
	d = w.decide(t)
	if len(d.Resizes) != 0 || len(d.Canary.State.Revert) != 0 {
		t.Errorf("rolled back: sends %v, revert %v; want nothing left", sends(d), canaryNames(d.Canary.State.Revert))
	}
}

// TestCanaryGoneOrUnlowered: a canary pod deleted, or whose lowering never
// reached its spec, ends its canary without a verdict and another starts.
func TestCanaryGoneOrUnlowered(t *testing.T) {
	w := newCanaryWorld()
	w.lowered(0, w.now.Add(-time.Minute))
	w.pods[0].Pod = canaryPod("web-0", "500m", "1")
	w.pods[0].LastResize = time.Time{}
	d := w.decide(t)
	if diff := cmp.Diff([]string{"web-0 app cpu 500m -> 200m"}, sends(d)); diff != "" {
		t.Errorf("sends (-want,+got):\n%s", diff)
	}
	w = newCanaryWorld()
	w.lowered(0, w.now.Add(-time.Minute))
	w.pods = w.pods[1:]
	d = w.decide(t)
	if diff := cmp.Diff([]string{"web-1 app cpu 500m -> 200m"}, sends(d)); diff != "" {
		t.Errorf("sends with the canary gone (-want,+got):\n%s", diff)
	}
}

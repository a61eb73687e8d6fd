package autoscale_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/limits"
	"github.com/tailorhq/tailor/internal/podchange"
)

// limitsWorld is the canary world (three pods wanting their CPU lowered,
// on a big node, maxConcurrentResizes 3) with a fourth pod, web-3, that
// wants its CPU raised, and no canary unless a case adds one.
func limitsWorld(sd *v1alpha1.ScaleDownRules) *canaryWorld {
	w := newCanaryWorld()
	w.spec.Behavior.ScaleDown = sd
	w.spec.Behavior.MaxConcurrentResizes = ptrTo(int32(4))
	raise := canaryPod("web-3", "500m", "1")
	w.pods = append(w.pods, fleet.PodInput{Pod: raise, Targets: map[string]podchange.Target{"app": {CPU: quantity("800m")}},
		WorkingSet: w.pods[0].WorkingSet})
	return w
}

func (w *canaryWorld) decideLimits(t *testing.T, lowered limits.Lowered) autoscale.SyncDecision {
	t.Helper()
	w.budget = lowered
	return w.decide(t)
}

// TestLoweringsHeldOutsideTheWindow: outside every window the lowerings
// wait, the raise goes, and the decision is due again when the next
// window opens; inside one, everything goes.
func TestLoweringsHeldOutsideTheWindow(t *testing.T) {
	nightly := []v1alpha1.ChangeWindow{window("0 22 * * *", "", 2*time.Hour)} // canaryNow is 12:00 UTC
	cases := map[string]struct {
		at          time.Time
		wantSends   []string
		wantHeld    []string
		wantRetry   time.Duration
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		"noon: outside": {
			at:        canaryNow,
			wantSends: []string{"web-3 app cpu 500m -> 800m"},
			wantHeld:  []string{"web-0 OutsideWindow", "web-1 OutsideWindow", "web-2 OutsideWindow"},
			wantRetry: 10 * time.Hour, wantStatus: metav1.ConditionTrue, wantReason: v1alpha1.LoweringsReasonOutsideWindow,
			wantMessage: "3 pod(s)' lowerings held: lowerings wait for a change window (behavior.scaleDown.windows): none is open; the next opens at 2026-11-21T22:00:00Z",
		},
		"23:00: inside": {
			at:         canaryNow.Add(11 * time.Hour),
			wantSends:  []string{"web-3 app cpu 500m -> 800m", "web-0 app cpu 500m -> 200m", "web-1 app cpu 500m -> 200m", "web-2 app cpu 500m -> 200m"},
			wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.LoweringsReasonAllowed,
			wantMessage: `no lowering is held: change window "0 22 * * *" UTC for 2h0m0s is open`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := limitsWorld(&v1alpha1.ScaleDownRules{Windows: nightly})
			w.now = tc.at
			d := w.decideLimits(t, nil)
			if diff := cmp.Diff(tc.wantSends, sends(d)); diff != "" {
				t.Errorf("sends (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantHeld, holds(d)); diff != "" {
				t.Errorf("held (-want,+got):\n%s", diff)
			}
			if tc.wantRetry > 0 && d.RetryAfter != tc.wantRetry {
				t.Errorf("retry after %s, want %s: when the window opens", d.RetryAfter, tc.wantRetry)
			}
			l := d.Limits
			if !l.Active || l.Status != tc.wantStatus || l.Reason != tc.wantReason || !strings.Contains(l.Message, tc.wantMessage) {
				t.Errorf("condition %v %s %s: %q; want %s %s containing %q", l.Active, l.Status, l.Reason, l.Message, tc.wantStatus, tc.wantReason, tc.wantMessage)
			}
		})
	}
}

// TestLoweringBudgetHoldsTheRest: a budget of two pods an hour lowers the
// two that waited longest and holds the third until the first lowering is
// an hour old; what was lowered before, restored from the checkpoint,
// counts; a pod already counted may be lowered again; raises never wait.
func TestLoweringBudgetHoldsTheRest(t *testing.T) {
	ago := func(d time.Duration) time.Time { return canaryNow.Add(-d) }
	cases := map[string]struct {
		budget      intstr.IntOrString
		lowered     limits.Lowered
		lastResize  map[int]time.Time
		wantSends   []string
		wantHeld    []string
		wantLowered []string
		wantRetry   time.Duration
		wantMessage string
	}{
		"none lowered: the first two by name go": {
			budget:      intstr.FromInt32(2),
			wantSends:   []string{"web-3 app cpu 500m -> 800m", "web-0 app cpu 500m -> 200m", "web-1 app cpu 500m -> 200m"},
			wantHeld:    []string{"web-2 BudgetSpent"},
			wantLowered: []string{"web-0@0s", "web-1@0s"},
			wantRetry:   time.Hour,
			wantMessage: "1 pod(s)' lowerings held: the lowering budget (behavior.scaleDown.budget) is spent: 2 pod(s) lowered within the last hour, of 2 allowed; the next frees at 2026-11-21T13:00:00Z",
		},
		"the longest since its last resize goes first": {
			budget:      intstr.FromInt32(1),
			lastResize:  map[int]time.Time{0: ago(time.Minute), 1: ago(2 * time.Hour), 2: ago(time.Hour)},
			wantSends:   []string{"web-3 app cpu 500m -> 800m", "web-1 app cpu 500m -> 200m"},
			wantHeld:    []string{"web-0 BudgetSpent", "web-2 BudgetSpent"},
			wantLowered: []string{"web-1@0s"},
			wantRetry:   time.Hour,
		},
		"a percent: 50% of 4 pods is two": {
			budget:      intstr.FromString("50%"),
			wantSends:   []string{"web-3 app cpu 500m -> 800m", "web-0 app cpu 500m -> 200m", "web-1 app cpu 500m -> 200m"},
			wantHeld:    []string{"web-2 BudgetSpent"},
			wantLowered: []string{"web-0@0s", "web-1@0s"},
		},
		// A manager restarted: what its predecessor lowered 59m59s ago
		// (others' pods, since replaced) still counts.
		"restored from the checkpoint: spent": {
			budget:      intstr.FromInt32(2),
			lowered:     limits.Lowered{"gone-a": ago(time.Hour - time.Second), "gone-b": ago(30 * time.Minute)},
			wantSends:   []string{"web-3 app cpu 500m -> 800m"},
			wantHeld:    []string{"web-0 BudgetSpent", "web-1 BudgetSpent", "web-2 BudgetSpent"},
			wantLowered: []string{"gone-a@-59m59s", "gone-b@-30m0s"},
			wantRetry:   time.Second,
			wantMessage: "the next frees at 2026-11-21T12:00:01Z",
		},
		"restored from the checkpoint: an hour old no longer counts": {
			budget:      intstr.FromInt32(2),
			lowered:     limits.Lowered{"gone-a": ago(time.Hour), "gone-b": ago(30 * time.Minute)},
			wantSends:   []string{"web-3 app cpu 500m -> 800m", "web-0 app cpu 500m -> 200m"},
			wantHeld:    []string{"web-1 BudgetSpent", "web-2 BudgetSpent"},
			wantLowered: []string{"gone-b@-30m0s", "web-0@0s"},
			wantRetry:   30 * time.Minute,
		},
		"a pod counted within the hour is lowered again for free": {
			budget:      intstr.FromInt32(1),
			lowered:     limits.Lowered{"web-2": ago(10 * time.Minute)},
			wantSends:   []string{"web-3 app cpu 500m -> 800m", "web-2 app cpu 500m -> 200m"},
			wantHeld:    []string{"web-0 BudgetSpent", "web-1 BudgetSpent"},
			wantLowered: []string{"web-2@0s"},
			wantRetry:   time.Hour,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := limitsWorld(&v1alpha1.ScaleDownRules{Budget: &v1alpha1.LoweringBudget{Pods: &tc.budget}})
			for i, at := range tc.lastResize {
				w.pods[i].LastResize = at
			}
			d := w.decideLimits(t, tc.lowered)
			checkBudget(t, d, tc.wantSends, tc.wantHeld, tc.wantLowered, tc.wantRetry)
			if !strings.Contains(d.Limits.Message, tc.wantMessage) {
				t.Errorf("condition message %q, want it to contain %q", d.Limits.Message, tc.wantMessage)
			}
		})
	}
}

// TestWindowHoldsACanaryButNotItsRollback: outside the window no canary
// pod is lowered; a canary that trips is raised back whatever the window.
func TestWindowHoldsACanaryButNotItsRollback(t *testing.T) {
	closed := []v1alpha1.ChangeWindow{window("0 22 * * *", "", time.Hour)}
	t.Run("no canary starts", func(t *testing.T) {
		w := newCanaryWorld()
		w.spec.Behavior.ScaleDown.Windows = closed
		d := w.decideLimits(t, nil)
		if len(d.Sends) != 0 || len(d.Canary.State.Pods) != 0 {
			t.Errorf("sends %v, canary pods %v: want none outside the window", sends(d), canaryNames(d.Canary.State.Pods))
		}
		if diff := cmp.Diff([]string{"web-0 OutsideWindow", "web-1 Canary", "web-2 Canary"}, holds(d)); diff != "" {
			t.Errorf("held (-want,+got):\n%s", diff)
		}
	})
	t.Run("the rollback goes", func(t *testing.T) {
		w := newCanaryWorld()
		w.spec.Behavior.ScaleDown.Windows = closed
		w.spec.Behavior.ScaleDown.Budget = &v1alpha1.LoweringBudget{Pods: ptrTo(intstr.FromInt32(1))}
		w.lowered(0, w.now.Add(-time.Minute))
		w.pods[0].Pod.Status.ContainerStatuses[0].RestartCount = 1
		d := w.decideLimits(t, limits.Lowered{"web-0": w.now.Add(-time.Minute)})
		if diff := cmp.Diff([]string{"web-0 app cpu 200m -> 500m"}, sends(d)); diff != "" {
			t.Errorf("sends (-want,+got):\n%s", diff)
		}
	})
}

// TestStartupBoostEndsOutsideTheWindow: taking a startup boost back gives
// the pod the size it had before it; no window or budget holds it.
func TestStartupBoostEndsOutsideTheWindow(t *testing.T) {
	w := limitsWorld(&v1alpha1.ScaleDownRules{
		Windows: []v1alpha1.ChangeWindow{window("0 22 * * *", "", time.Hour)},
		Budget:  &v1alpha1.LoweringBudget{Pods: ptrTo(intstr.FromInt32(1))},
	})
	w.pods[1].Boost = map[string]bool{"app": true}
	d := w.decideLimits(t, limits.Lowered{"other": w.now.Add(-time.Minute)})
	if diff := cmp.Diff([]string{"web-3 app cpu 500m -> 800m", "web-1 app cpu 500m -> 200m"}, sends(d)); diff != "" {
		t.Errorf("sends (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"web-0 OutsideWindow", "web-2 OutsideWindow"}, holds(d)); diff != "" {
		t.Errorf("held (-want,+got):\n%s", diff)
	}
	if _, counted := d.Limits.Lowered["web-1"]; counted {
		t.Error("the boost's end is counted against the budget")
	}
}

// TestNamespaceBudget: budget.namespacePods counts the pods every policy of
// the namespace lowered within the hour, the policy's own included; the
// policy lowers only while that leaves room, a pod the namespace counts
// already going for free, and raises never wait. With a budget of its own
// too, each holds what it has no room for.
func TestNamespaceBudget(t *testing.T) {
	ago := func(d time.Duration) time.Time { return canaryNow.Add(-d) }
	api := limits.Lowered{"api-0": ago(20 * time.Minute), "api-1": ago(10 * time.Minute)}
	cases := map[string]struct {
		budget      v1alpha1.LoweringBudget
		byPolicy    limits.LoweredBy
		nsPods      int
		lowered     limits.Lowered
		wantSends   []string
		wantHeld    []string
		wantLowered []string
		wantRetry   time.Duration
		wantReason  string
		wantMessage string
		wantCounts  map[fleet.HoldReason]int
	}{
		"another policy lowered two of three: one goes": {
			budget:      v1alpha1.LoweringBudget{NamespacePods: ptrTo(intstr.FromInt32(3))},
			byPolicy:    limits.LoweredBy{"api": api},
			wantSends:   []string{"web-3 app cpu 500m -> 800m", "web-0 app cpu 500m -> 200m"},
			wantHeld:    []string{"web-1 NamespaceBudgetSpent", "web-2 NamespaceBudgetSpent"},
			wantLowered: []string{"web-0@0s"},
			wantRetry:   40 * time.Minute,
			wantReason:  v1alpha1.LoweringsReasonNamespaceBudgetSpent,
			wantMessage: "2 pod(s)' lowerings held: the namespace's lowering budget (behavior.scaleDown.budget.namespacePods) is spent: 3 of the namespace's pods lowered within the last hour (by policy api (2), web (1)), of 3 allowed; the next frees at 2026-11-21T12:40:00Z",
			wantCounts:  map[fleet.HoldReason]int{limits.HoldNamespaceBudget: 2},
		},
		"spent by the others: only the raise goes": {
			budget:      v1alpha1.LoweringBudget{NamespacePods: ptrTo(intstr.FromInt32(2))},
			byPolicy:    limits.LoweredBy{"api": api},
			wantSends:   []string{"web-3 app cpu 500m -> 800m"},
			wantHeld:    []string{"web-0 NamespaceBudgetSpent", "web-1 NamespaceBudgetSpent", "web-2 NamespaceBudgetSpent"},
			wantRetry:   40 * time.Minute,
			wantReason:  v1alpha1.LoweringsReasonNamespaceBudgetSpent,
			wantMessage: "2 of the namespace's pods lowered within the last hour (by policy api (2)), of 2 allowed",
		},
		"a percent of the namespace's running pods: 10% of 25 is three": {
			budget:      v1alpha1.LoweringBudget{NamespacePods: ptrTo(intstr.FromString("10%"))},
			byPolicy:    limits.LoweredBy{"api": {"api-0": ago(time.Minute)}},
			nsPods:      25,
			wantSends:   []string{"web-3 app cpu 500m -> 800m", "web-0 app cpu 500m -> 200m", "web-1 app cpu 500m -> 200m"},
			wantHeld:    []string{"web-2 NamespaceBudgetSpent"},
			wantLowered: []string{"web-0@0s", "web-1@0s"},
			wantReason:  v1alpha1.LoweringsReasonNamespaceBudgetSpent,
			wantMessage: "of 3 allowed (10% of 25 running pod(s))",
		},
		"an hour old no longer counts": {
			budget:      v1alpha1.LoweringBudget{NamespacePods: ptrTo(intstr.FromInt32(3))},
			byPolicy:    limits.LoweredBy{"api": {"api-0": ago(time.Hour), "api-1": ago(time.Hour + time.Minute)}},
			wantSends:   []string{"web-3 app cpu 500m -> 800m", "web-0 app cpu 500m -> 200m", "web-1 app cpu 500m -> 200m", "web-2 app cpu 500m -> 200m"},
			wantLowered: []string{"web-0@0s", "web-1@0s", "web-2@0s"},
			wantReason:  v1alpha1.LoweringsReasonAllowed,
			wantMessage: "no lowering is held: 3 of the 3 pod(s) the namespace's hourly budget allows lowered within the last hour",
		},
		// The policy's own lowerings, restored after a restart: its
		// checkpoint's entry (as the namespace's count reads it) and
		// its own count agree, and are not counted twice.
		"the policy's own lowerings count once": {
			budget:      v1alpha1.LoweringBudget{NamespacePods: ptrTo(intstr.FromInt32(3))},
			byPolicy:    limits.LoweredBy{"web": {"gone": ago(5 * time.Minute)}, "api": {"api-0": ago(time.Minute)}},
			lowered:     limits.Lowered{"gone": ago(5 * time.Minute)},
			wantSends:   []string{"web-3 app cpu 500m -> 800m", "web-0 app cpu 500m -> 200m"},
			wantHeld:    []string{"web-1 NamespaceBudgetSpent", "web-2 NamespaceBudgetSpent"},
			wantLowered: []string{"gone@-5m0s", "web-0@0s"},
			wantReason:  v1alpha1.LoweringsReasonNamespaceBudgetSpent,
			wantMessage: "(by policy api (1), web (2))",
		},
		"a pod the namespace counts already is lowered again for free": {
			budget:      v1alpha1.LoweringBudget{NamespacePods: ptrTo(intstr.FromInt32(3))},
			byPolicy:    limits.LoweredBy{"api": api, "web": {"web-2": ago(30 * time.Minute)}},
			wantSends:   []string{"web-3 app cpu 500m -> 800m", "web-2 app cpu 500m -> 200m"},
			wantHeld:    []string{"web-0 NamespaceBudgetSpent", "web-1 NamespaceBudgetSpent"},
			wantLowered: []string{"web-2@0s"},
			wantReason:  v1alpha1.LoweringsReasonNamespaceBudgetSpent,
		},
		"the policy's own budget is the tighter": {
			budget:      v1alpha1.LoweringBudget{Pods: ptrTo(intstr.FromInt32(1)), NamespacePods: ptrTo(intstr.FromInt32(5))},
			byPolicy:    limits.LoweredBy{"api": api},
			wantSends:   []string{"web-3 app cpu 500m -> 800m", "web-0 app cpu 500m -> 200m"},
			wantHeld:    []string{"web-1 BudgetSpent", "web-2 BudgetSpent"},
			wantLowered: []string{"web-0@0s"},
			wantRetry:   time.Hour,
			wantReason:  v1alpha1.LoweringsReasonBudgetSpent,
			wantCounts:  map[fleet.HoldReason]int{limits.HoldBudget: 2},
		},
		"the namespace's budget is the tighter": {
			budget:      v1alpha1.LoweringBudget{Pods: ptrTo(intstr.FromInt32(3)), NamespacePods: ptrTo(intstr.FromInt32(3))},
			byPolicy:    limits.LoweredBy{"api": {"api-0": ago(50 * time.Minute)}},
			wantSends:   []string{"web-3 app cpu 500m -> 800m", "web-0 app cpu 500m -> 200m", "web-1 app cpu 500m -> 200m"},
			wantHeld:    []string{"web-2 NamespaceBudgetSpent"},
			wantLowered: []string{"web-0@0s", "web-1@0s"},
			wantRetry:   10 * time.Minute,
			wantReason:  v1alpha1.LoweringsReasonNamespaceBudgetSpent,
			wantMessage: "the next frees at 2026-11-21T12:10:00Z",
			wantCounts:  map[fleet.HoldReason]int{limits.HoldNamespaceBudget: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := limitsWorld(&v1alpha1.ScaleDownRules{Budget: &tc.budget})
			w.namespace = limits.NamespaceLowerings{Policy: "web", ByPolicy: tc.byPolicy, Pods: tc.nsPods}
			w.countLowerings = true
			d := w.decideLimits(t, tc.lowered)
			checkBudget(t, d, tc.wantSends, tc.wantHeld, tc.wantLowered, tc.wantRetry)
			if d.Limits.Reason != tc.wantReason || !strings.Contains(d.Limits.Message, tc.wantMessage) {
				t.Errorf("condition %s: %q, want %s containing %q", d.Limits.Reason, d.Limits.Message, tc.wantReason, tc.wantMessage)
			}
			if tc.wantCounts != nil {
				if diff := cmp.Diff(tc.wantCounts, d.Limits.Held); diff != "" {
					t.Errorf("held by reason (-want,+got):\n%s", diff)
				}
			}
		})
	}
}

// TestLoweringsCountedForANamespaceBudget: a policy without a budget of
// its own, in a namespace where another policy has a namespace budget,
// holds nothing and has no LoweringsHeld condition, but counts what it
// lowers, for its checkpoint and so the namespace's count.
func TestLoweringsCountedForANamespaceBudget(t *testing.T) {
	w := limitsWorld(nil)
	w.countLowerings = true
	d := w.decideLimits(t, limits.Lowered{"old": canaryNow.Add(-time.Hour), "recent": canaryNow.Add(-time.Minute)})
	if diff := cmp.Diff([]string{"web-3 app cpu 500m -> 800m", "web-0 app cpu 500m -> 200m", "web-1 app cpu 500m -> 200m", "web-2 app cpu 500m -> 200m"}, sends(d)); diff != "" {
		t.Errorf("sends (-want,+got):\n%s", diff)
	}
	var got []string
	for uid, at := range d.Limits.Lowered {
		got = append(got, fmt.Sprintf("%s@%s", uid, at.Sub(canaryNow)))
	}
	if diff := cmp.Diff([]string{"recent@-1m0s", "web-0@0s", "web-1@0s", "web-2@0s"}, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("lowered for the next sync (-want,+got):\n%s", diff)
	}
	if d.Limits.Active {
		t.Errorf("LoweringsHeld active (%s: %s), want no condition: the policy has no windows or budget", d.Limits.Reason, d.Limits.Message)
	}
	w.countLowerings = false
	if d := w.decideLimits(t, nil); d.Limits.Lowered != nil {
		t.Errorf("lowered %v, want nothing counted when no budget counts the policy's lowerings", d.Limits.Lowered)
	}
}

// checkBudget compares what a sync under a budget sent, held and counted
// for the next sync, and when it asks to be synced again (wantRetry 0:
// not checked).
func checkBudget(t *testing.T, d autoscale.SyncDecision, wantSends, wantHeld, wantLowered []string, wantRetry time.Duration) {
	t.Helper()
	if diff := cmp.Diff(wantSends, sends(d)); diff != "" {
		t.Errorf("sends (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(wantHeld, holds(d)); diff != "" {
		t.Errorf("held (-want,+got):\n%s", diff)
	}
	var got []string
	for uid, at := range d.Limits.Lowered {
		got = append(got, fmt.Sprintf("%s@%s", uid, at.Sub(canaryNow)))
	}
	if diff := cmp.Diff(wantLowered, got, cmpopts.SortSlices(func(a, b string) bool { return a < b }), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("lowered for the next sync (-want,+got):\n%s", diff)
	}
	if wantRetry > 0 && d.RetryAfter != wantRetry {
		t.Errorf("retry after %s, want %s: when the budget frees", d.RetryAfter, wantRetry)
	}
}

func window(schedule, zone string, d time.Duration) v1alpha1.ChangeWindow {
	w := v1alpha1.ChangeWindow{Schedule: schedule, Duration: metav1.Duration{Duration: d}}
	if zone != "" {
		w.TimeZone = &zone
	}
	return w
}

func limitsOf(t *testing.T, windows ...v1alpha1.ChangeWindow) limits.Config {
	t.Helper()
	spec := &v1alpha1.TailorPolicySpec{Behavior: &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownRules{Windows: windows}}}
	l, _, err := limits.ConfigOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

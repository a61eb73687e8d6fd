//go:build controller

package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
)

// idleWeb makes Deployment web with n idle pods (web-0.., CPU 500m
// requested and 1 core limit, using 20m) and a targetRef policy of it that
// sizes CPU no lower than 125m, lowers after a minute's stabilization, has
// the scale-down rules sd, and resizes up to n pods at once: what holds a
// lowering back is sd, not the pace.
func idleWeb(e *env, n int, sd v1alpha1.ScaleDownRules) {
	e.t.Helper()
	idleApp(e, "web", n, sd)
}

// idleApp is idleWeb for a Deployment and policy named app.
func idleApp(e *env, app string, n int, sd v1alpha1.ScaleDownRules) {
	e.t.Helper()
	rs := e.ownedDeployment(app, map[string]string{"app": app})
	for i := range n {
		name := fmt.Sprintf("%s-%d", app, i)
		e.pod(app, podOf(rs, name))
		e.source.Set(e.ns, name, "app", 0.02, 100*mi)
	}
	e.policy(app, func(s *v1alpha1.TailorPolicySpec) {
		targetRef(app)(s)
		onlyResource(corev1.ResourceCPU)(s)
		s.ResourcePolicy.ContainerPolicies[0].MinAllowed = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("125m")}
		sd.StabilizationWindow = &metav1.Duration{Duration: time.Minute}
		s.Behavior = &v1alpha1.Behavior{ScaleDown: &sd, MaxConcurrentResizes: ptrTo(int32(n))}
	})
}

// Issue #25 §3: outside the change window the idle pods keep their CPU;
// when the window opens (the fake clock reaches it) the lowerings go out;
// once it has closed, load comes back and the pods are raised at once:
// raises never wait for a window.
func TestChangeWindowHoldsLoweringsUntilItOpens(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	// The window opens on the first whole minute at least 5 minutes on, in
	// Tokyo's time (UTC+9, no DST), and stays open 10 minutes.
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	opens := e.clock.Now().Add(5 * time.Minute).Truncate(time.Minute).Add(time.Minute).In(tokyo)
	idleWeb(e, 3, v1alpha1.ScaleDownRules{Windows: []v1alpha1.ChangeWindow{{
		Schedule: fmt.Sprintf("%d %d * * *", opens.Minute(), opens.Hour()), TimeZone: ptrTo("Asia/Tokyo"),
		Duration: metav1.Duration{Duration: 10 * time.Minute},
	}}})

	for e.clock.Now().Before(opens.Add(-syncPeriod)) {
		e.sync("web")
		if got := e.cpuOf("web-0", "web-1", "web-2"); got[0] != "500m" || got[1] != "500m" || got[2] != "500m" {
			t.Fatalf("at %s, before the window opens at %s: CPU %v, want 500m all", e.clock.Now().UTC(), opens.UTC(), got)
		}
	}
	c := e.webCondition(v1alpha1.ConditionLoweringsHeld)
	if want := opens.UTC().Format(time.RFC3339); c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.LoweringsReasonOutsideWindow || !strings.Contains(c.Message, want) {
		t.Errorf("LoweringsHeld %s %s: %q, want True OutsideWindow naming the opening %s", c.Status, c.Reason, c.Message, want)
	}
	if c := condition(e.getPolicy("web"), v1alpha1.ConditionResizesBlocked); c == nil || !strings.Contains(c.Reason+c.Message, "OutsideWindow") {
		t.Errorf("ResizesBlocked %+v, want it to say OutsideWindow", c)
	}
	if got := metricValue(t, "tailor_lowerings_held", map[string]string{"namespace": e.ns, "policy": "web", "reason": "OutsideWindow"}); got != 3 {
		t.Errorf("tailor_lowerings_held{reason=OutsideWindow} %v, want 3", got)
	}

	// The window opens: the idle pods are lowered within a few syncs.
	e.syncs("web", 4)
	if got := e.cpuOf("web-0", "web-1", "web-2"); got[0] != "125m" || got[1] != "125m" || got[2] != "125m" {
		t.Fatalf("at %s, in the window: CPU %v, want 125m all%s", e.clock.Now().UTC(), got, e.events)
	}
	if c := e.webCondition(v1alpha1.ConditionLoweringsHeld); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.LoweringsReasonAllowed || !strings.Contains(c.Message, "is open") {
		t.Errorf("LoweringsHeld in the window %s %s: %q, want False Allowed, the window open", c.Status, c.Reason, c.Message)
	}

	// The window closes; then load comes back: raised in a sync or two.
	for e.clock.Now().Before(opens.Add(10 * time.Minute)) {
		e.sync("web")
	}
	// Throttled at their 250m limit: a container uses no more CPU than its
	// limit lets it (more is held as garbage).
	for _, n := range []string{"web-0", "web-1", "web-2"} {
		e.source.SetThrottled(e.ns, n, "app", 0.25, 200*mi, 0.9)
	}
	e.syncs("web", 3)
	for i, got := range e.cpuOf("web-0", "web-1", "web-2") {
		if q, was := resource.MustParse(got), resource.MustParse("125m"); q.Cmp(was) <= 0 {
			t.Errorf("throttled web-%d at %s at %s, outside the window: want it raised, raises never wait for a window", i, got, e.clock.Now().UTC())
		}
	}
}

// Issue #25 §3: a budget of two pods an hour lowers two of four idle pods
// and holds the others through the hour, across a manager restart (the
// count is kept in the checkpoint); an hour after the first lowerings the
// others follow.
func TestLoweringBudgetHoldsTheRestWithinTheHour(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	idleWeb(e, 4, v1alpha1.ScaleDownRules{Budget: &v1alpha1.LoweringBudget{Pods: ptrTo(intstr.FromInt32(2))}})
	names := []string{"web-0", "web-1", "web-2", "web-3"}
	loweredCount := func() int {
		n := 0
		for _, c := range e.cpuOf(names...) {
			if c != "500m" {
				n++
			}
		}
		return n
	}
	var first time.Duration
	for range 30 {
		e.sync("web")
		if loweredCount() > 0 {
			first = e.elapsed()
			break
		}
	}
	if first == 0 {
		t.Fatalf("nothing lowered after 30 syncs: %v%s", e.cpuOf(names...), e.events)
	}
	if got := loweredCount(); got != 2 {
		t.Fatalf("%d pods lowered in the first sync that lowered any (%v), want the budget's 2", got, e.cpuOf(names...))
	}
	var cp v1alpha1.TailorCheckpoint
	if err := apiClient.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "web"}, &cp); err != nil {
		t.Fatalf("the checkpoint: %v", err)
	}
	if len(cp.Spec.Lowered) != 2 {
		t.Errorf("checkpoint lowered %+v, want the 2 pods lowered", cp.Spec.Lowered)
	}
	c := e.webCondition(v1alpha1.ConditionLoweringsHeld)
	if c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.LoweringsReasonBudgetSpent || !strings.Contains(c.Message, "2 pod(s) lowered within the last hour, of 2 allowed") {
		t.Errorf("LoweringsHeld %s %s: %q, want True BudgetSpent", c.Status, c.Reason, c.Message)
	}
	// Half an hour on the manager restarts: it must not grant the hour
	// again.
	holds := func(until time.Duration) {
		t.Helper()
		for e.elapsed()-first < until {
			e.sync("web")
			if got := loweredCount(); got != 2 {
				t.Fatalf("%s after the first lowerings: %d pods lowered (%v), want 2 until the hour has passed", e.elapsed()-first, got, e.cpuOf(names...))
			}
		}
	}
	holds(30 * time.Minute)
	e.restart()
	holds(time.Hour - syncPeriod)
	e.syncs("web", 3)
	if got := loweredCount(); got != 4 {
		t.Errorf("%s after the first lowerings: %d pods lowered (%v), want all 4", e.elapsed()-first, got, e.cpuOf(names...))
	}
}

// Issue #25 §3: what the CRD's rules can judge of a change window and a
// budget is refused by the apiserver, each with a message that says what
// to change; what they cannot (a time zone's name, a cron field's range)
// makes the policy Ready False InvalidPolicy, and nothing is lowered.
func TestChangeWindowValidation(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	rejected := map[string]struct {
		sd   v1alpha1.ScaleDownRules
		want string
	}{
		"six fields": {
			sd:   v1alpha1.ScaleDownRules{Windows: []v1alpha1.ChangeWindow{{Schedule: "0 0 22 * * *", Duration: metav1.Duration{Duration: time.Hour}}}},
			want: "schedule must be five cron fields",
		},
		"a CRON_TZ prefix": {
			sd:   v1alpha1.ScaleDownRules{Windows: []v1alpha1.ChangeWindow{{Schedule: "CRON_TZ=UTC 0 22 * * *", Duration: metav1.Duration{Duration: time.Hour}}}},
			want: "set the time zone in timeZone",
		},
		"@every": {
			sd:   v1alpha1.ScaleDownRules{Windows: []v1alpha1.ChangeWindow{{Schedule: "@every 1h", Duration: metav1.Duration{Duration: time.Hour}}}},
			want: "schedule must be five cron fields",
		},
		"a duration under a minute": {
			sd:   v1alpha1.ScaleDownRules{Windows: []v1alpha1.ChangeWindow{{Schedule: "0 22 * * *", Duration: metav1.Duration{Duration: 30 * time.Second}}}},
			want: "duration must be a duration such as 30m or 8h, between 1m and 168h",
		},
		"a time zone with spaces": {
			sd:   v1alpha1.ScaleDownRules{Windows: []v1alpha1.ChangeWindow{{Schedule: "0 22 * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: ptrTo("Europe/ Berlin")}}},
			want: "spec.behavior.scaleDown.windows[0].timeZone",
		},
		"a budget of no pods": {
			sd:   v1alpha1.ScaleDownRules{Budget: &v1alpha1.LoweringBudget{Pods: ptrTo(intstr.FromInt32(0))}},
			want: "pods must be a count from 1 to 1000 or a percent from 1% to 100%",
		},
		"a budget above 100%": {
			sd:   v1alpha1.ScaleDownRules{Budget: &v1alpha1.LoweringBudget{Pods: ptrTo(intstr.FromString("150%"))}},
			want: "pods must be a count from 1 to 1000 or a percent from 1% to 100%",
		},
		"a budget of neither": {
			sd:   v1alpha1.ScaleDownRules{Budget: &v1alpha1.LoweringBudget{}},
			want: "budget needs pods, namespacePods or both",
		},
		"a namespace budget of no pods": {
			sd:   v1alpha1.ScaleDownRules{Budget: &v1alpha1.LoweringBudget{NamespacePods: ptrTo(intstr.FromInt32(0))}},
			want: "namespacePods must be a count from 1 to 1000 or a percent from 1% to 100%",
		},
		"a namespace budget of 0%": {
			sd:   v1alpha1.ScaleDownRules{Budget: &v1alpha1.LoweringBudget{Pods: ptrTo(intstr.FromInt32(1)), NamespacePods: ptrTo(intstr.FromString("0%"))}},
			want: "namespacePods must be a count from 1 to 1000 or a percent from 1% to 100%",
		},
	}
	for name, tc := range rejected {
		t.Run(name, func(t *testing.T) {
			p := &v1alpha1.TailorPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "bad"}, Spec: v1alpha1.TailorPolicySpec{
				TargetRef: &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
				Behavior:  &v1alpha1.Behavior{ScaleDown: &tc.sd},
			}}
			err := apiClient.Create(e.ctx, p)
			if err == nil {
				_ = apiClient.Delete(e.ctx, p)
				t.Fatalf("created; want it refused saying %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("refused with %v, want it to say %q", err, tc.want)
			}
		})
	}

	t.Run("an unknown time zone", func(t *testing.T) {
		idleWeb(e, 1, v1alpha1.ScaleDownRules{Windows: []v1alpha1.ChangeWindow{{
			Schedule: "* * * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: ptrTo("Mars/Olympus"),
		}}})
		e.syncs("web", 9)
		c := condition(e.getPolicy("web"), v1alpha1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonInvalidPolicy || !strings.Contains(c.Message, `timeZone "Mars/Olympus" is not a time zone`) {
			t.Errorf("Ready %+v, want False InvalidPolicy naming the time zone", c)
		}
		if got := e.cpuOf("web-0")[0]; got != "500m" {
			t.Errorf("web-0 at %s, want 500m: an invalid policy changes nothing", got)
		}
	})
}

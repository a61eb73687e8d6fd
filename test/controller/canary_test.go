//go:build controller

package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
)

// canaryWindow is the window of the canary tests' policy: 12 syncs.
const canaryWindow = 2 * time.Minute

// idleDeployment makes Deployment web with three idle pods (web-0..2, CPU
// 500m requested and 1 core limit, using 20m) and a targetRef policy of it
// that sizes CPU, no lower than 125m (so that one lowering, in one step,
// takes them there), lowers after a minute's stabilization, and sends each
// lowering through a canary watched for canaryWindow; canary shapes the
// canary further.
func idleDeployment(e *env, canary ...func(*v1alpha1.Canary)) {
	e.t.Helper()
	rs := e.ownedDeployment("web", map[string]string{"app": "web"})
	for i := range 3 {
		name := fmt.Sprintf("web-%d", i)
		e.pod("web", podOf(rs, name))
		e.source.Set(e.ns, name, "app", 0.02, 100*mi)
	}
	e.policy("web", func(s *v1alpha1.TailorPolicySpec) {
		targetRef("web")(s)
		onlyResource(corev1.ResourceCPU)(s)
		s.ResourcePolicy.ContainerPolicies[0].MinAllowed = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("125m")}
		s.Behavior = &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownRules{
			StabilizationWindow: &metav1.Duration{Duration: time.Minute},
			Canary:              &v1alpha1.Canary{Window: &metav1.Duration{Duration: canaryWindow}},
		}}
		for _, f := range canary {
			f(s.Behavior.ScaleDown.Canary)
		}
	})
}

// cpuOf is the pods' CPU requests, in name order.
func (e *env) cpuOf(names ...string) []string {
	e.t.Helper()
	var out []string
	for _, n := range names {
		out = append(out, requestOf(e.getPod(n), "app", corev1.ResourceCPU))
	}
	return out
}

// untilCanary syncs until one of web's pods is lowered, at most 20 syncs,
// and says which CPU the canary got.
func (e *env) untilCanary() string {
	e.t.Helper()
	for range 20 {
		e.sync("web")
		if got := e.cpuOf("web-0", "web-1", "web-2"); got[0] != "500m" || got[1] != "500m" || got[2] != "500m" {
			if got[1] != "500m" || got[2] != "500m" {
				e.t.Fatalf("at +%s pods lowered %v, want only web-0, the first by name", e.elapsed(), got)
			}
			return got[0]
		}
	}
	e.t.Fatalf("no pod lowered after 20 syncs; conditions %+v; events %s", e.getPolicy("web").Status.Conditions, e.events)
	return ""
}

// Issue #25: the three idle pods of a Deployment are lowered one first;
// the others wait out the canary's window, then follow.
func TestCanaryLowersOnePodThenTheRest(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	idleDeployment(e)
	lowered := e.untilCanary()
	start := e.elapsed()
	if c := e.webCondition(v1alpha1.ConditionCanary); c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.CanaryReasonWatching || !strings.Contains(c.Message, "web-0") {
		t.Errorf("Canary condition %s %s: %q, want True Watching naming web-0", c.Status, c.Reason, c.Message)
	}
	if n := e.events.count("web", "CanaryStarted"); n != 1 {
		t.Errorf("%d CanaryStarted events on the policy, want 1:%s", n, e.events)
	}
	if c := condition(e.getPolicy("web"), v1alpha1.ConditionResizesBlocked); c == nil || c.Reason != "Canary" {
		t.Errorf("ResizesBlocked %+v, want reason Canary: the others' lowerings wait", c)
	}
	// The window: the others wait, however many syncs pass.
	for e.elapsed()-start < canaryWindow-syncPeriod {
		e.sync("web")
		if got := e.cpuOf("web-1", "web-2"); got[0] != "500m" || got[1] != "500m" {
			t.Fatalf("%s into the %s window: web-1, web-2 at %v, want both still 500m", e.elapsed()-start, canaryWindow, got)
		}
	}
	// Past it: promoted, and the others follow one sync each
	// (maxConcurrentResizes 1).
	e.syncs("web", 4)
	if diff := cmp.Diff([]string{lowered, lowered, lowered}, e.cpuOf("web-0", "web-1", "web-2")); diff != "" {
		t.Errorf("%s after the canary: CPU requests (-want,+got):\n%s", e.elapsed()-start, diff)
	}
	if c := e.webCondition(v1alpha1.ConditionCanary); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.CanaryReasonPromoted {
		t.Errorf("Canary condition %s %s: %q, want False Promoted", c.Status, c.Reason, c.Message)
	}
	if n := e.events.count("web", "CanaryPromoted"); n != 1 {
		t.Errorf("%d CanaryPromoted events, want 1:%s", n, e.events)
	}
	var cp v1alpha1.TailorCheckpoint
	if err := apiClient.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "web"}, &cp); err != nil {
		t.Fatalf("the checkpoint: %v", err)
	}
	if c := cp.Spec.Canary; c == nil || len(c.Proven) != 1 || c.Proven[0].Requests.Cpu().String() != lowered {
		t.Errorf("checkpoint canary %+v, want %s proven for app", c, lowered)
	}
}

// Issue #25: a canary that is OOM-killed or restarts during its window is
// raised back in place at once, the others are never lowered, an event and
// the condition name the guardrail, and the lowering is not tried again
// within the backoff.
func TestCanaryRolledBackOnGuardrail(t *testing.T) {
	cases := map[string]struct {
		// before runs before the canary, trip while it is watched.
		before, trip  func(e *env)
		guardrail     string
		wantInMessage string
	}{
		"OOM kill": {
			trip: func(e *env) { e.oomKill("web-0") }, guardrail: "OOMKill", wantInMessage: "container app OOM-killed",
		},
		"restart": {
			trip: func(e *env) { e.setReady("web-0", true, true) }, guardrail: "Restart", wantInMessage: "container app restart count 0 -> 1",
		},
		// The runtime fails the lowering (as the kubelet does a memory
		// limit below the usage): the canary never ran at it, so its
		// window would prove nothing. Its rollback is applied.
		"lowering refused": {
			before: func(e *env) {
				e.kubelet.Fail = func(p *corev1.Pod) string {
					if p.Name == "web-0" && p.Spec.Containers[0].Resources.Requests.Cpu().Cmp(resource.MustParse("500m")) < 0 {
						return "updating the container's cgroup: device or resource busy"
					}
					return ""
				}
			},
			guardrail: "ResizeRefused", wantInMessage: "the kubelet did not apply the lowering (failed: updating the container's cgroup: device or resource busy)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, controllerOptions{})
			idleDeployment(e)
			before := metricValue(t, "tailor_canary_rollbacks_total", map[string]string{"namespace": e.ns, "policy": "web", "guardrail": tc.guardrail})
			if tc.before != nil {
				tc.before(e)
			}
			e.untilCanary()
			e.syncs("web", 3)
			if tc.trip != nil {
				tc.trip(e)
			}
			// One sync: raised back in place, whatever minResizeInterval
			// (the canary was resized 30s ago) says.
			e.sync("web")
			if diff := cmp.Diff([]string{"500m", "500m", "500m"}, e.cpuOf("web-0", "web-1", "web-2")); diff != "" {
				t.Fatalf("the sync after the %s: CPU requests (-want,+got):\n%s%s", name, diff, e.events)
			}
			if got := limitOf(e.getPod("web-0"), "app", corev1.ResourceCPU); got != "1" {
				t.Errorf("web-0's CPU limit %s after the rollback, want 1 as before", got)
			}
			var rolled []event
			for _, ev := range e.events.all() {
				if ev.reason == "CanaryRolledBack" {
					rolled = append(rolled, ev)
				}
			}
			if len(rolled) != 1 || rolled[0].object != "web" || !strings.Contains(rolled[0].note, tc.wantInMessage) || !strings.Contains(rolled[0].note, tc.guardrail) {
				t.Errorf("CanaryRolledBack events %+v, want one on the policy saying %q (guardrail %s)", rolled, tc.wantInMessage, tc.guardrail)
			}
			c := e.webCondition(v1alpha1.ConditionCanary)
			if c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.CanaryReasonRolledBack || !strings.Contains(c.Message, tc.wantInMessage) {
				t.Errorf("Canary condition %s %s: %q, want True RolledBack saying %q", c.Status, c.Reason, c.Message, tc.wantInMessage)
			}
			if got := metricValue(t, "tailor_canary_rollbacks_total", map[string]string{"namespace": e.ns, "policy": "web", "guardrail": tc.guardrail}) - before; got != 1 {
				t.Errorf("tailor_canary_rollbacks_total{guardrail=%s} grew by %v, want 1", tc.guardrail, got)
			}
			// Ten minutes on, well within the hour's backoff: nothing is
			// lowered again, and new pods are sized at what the canary
			// was raised back to.
			for range 60 {
				e.sync("web")
				if diff := cmp.Diff([]string{"500m", "500m", "500m"}, e.cpuOf("web-0", "web-1", "web-2")); diff != "" {
					t.Fatalf("%s after the rollback: CPU requests (-want,+got):\n%s", e.elapsed(), diff)
				}
			}
			rec := e.getPolicy("web").Status.Recommendation
			if rec == nil || rec.ContainerRecommendations[0].Target.Cpu().Cmp(resource.MustParse("500m")) < 0 {
				t.Errorf("recommendation %+v during the backoff, want no less than the 500m rolled back to", rec)
			}
			if c := condition(e.getPolicy("web"), v1alpha1.ConditionResizesBlocked); c == nil || c.Reason != "CanaryBackoff" {
				t.Errorf("ResizesBlocked %+v during the backoff, want reason CanaryBackoff", c)
			}
		})
	}
}

// Issue #25: a manager restarted while the canary is watched carries on
// with it: the others are not lowered before its window ends, no other
// pod becomes a canary, and the window is not started again.
func TestCanarySurvivesRestart(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	idleDeployment(e)
	lowered := e.untilCanary()
	start := e.elapsed()
	e.syncs("web", 4)
	e.restart()
	for e.elapsed()-start < canaryWindow-syncPeriod {
		e.sync("web")
		if got := e.cpuOf("web-1", "web-2"); got[0] != "500m" || got[1] != "500m" {
			t.Fatalf("%s into the window, after a restart: web-1, web-2 at %v, want both still 500m", e.elapsed()-start, got)
		}
	}
	e.syncs("web", 4)
	if diff := cmp.Diff([]string{lowered, lowered, lowered}, e.cpuOf("web-0", "web-1", "web-2")); diff != "" {
		t.Errorf("%s after the canary, restarted in its window: CPU requests (-want,+got):\n%s", e.elapsed()-start, diff)
	}
	if n := e.events.count("web", "CanaryStarted"); n != 1 {
		t.Errorf("%d CanaryStarted events, want 1 (no new canary after the restart):%s", n, e.events)
	}
}

// A rollback's hold outlives a restart too.
func TestCanaryBackoffSurvivesRestart(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	idleDeployment(e)
	e.untilCanary()
	e.setReady("web-0", true, true)
	e.sync("web")
	e.restart()
	for range 30 {
		e.sync("web")
		if diff := cmp.Diff([]string{"500m", "500m", "500m"}, e.cpuOf("web-0", "web-1", "web-2")); diff != "" {
			t.Fatalf("%s after a rollback and a restart: CPU requests (-want,+got):\n%s", e.elapsed(), diff)
		}
	}
}

// A policy without a canary has no Canary condition and lowers its pods as
// before, one per sync.
func TestNoCanaryNoCondition(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	rs := e.ownedDeployment("web", map[string]string{"app": "web"})
	for i := range 3 {
		name := fmt.Sprintf("web-%d", i)
		e.pod("web", podOf(rs, name))
		e.source.Set(e.ns, name, "app", 0.02, 100*mi)
	}
	e.policy("web", func(s *v1alpha1.TailorPolicySpec) {
		targetRef("web")(s)
		onlyResource(corev1.ResourceCPU)(s)
		s.Behavior = &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownRules{StabilizationWindow: &metav1.Duration{Duration: time.Minute}}}
	})
	e.syncs("web", 12)
	for _, cpu := range e.cpuOf("web-0", "web-1", "web-2") {
		if cpu == "500m" {
			t.Errorf("after 2 minutes: CPU requests %v, want all lowered", e.cpuOf("web-0", "web-1", "web-2"))
			break
		}
	}
	if c := condition(e.getPolicy("web"), v1alpha1.ConditionCanary); c != nil {
		t.Errorf("Canary condition %+v on a policy without a canary", c)
	}
}

// The canary's fields are checked by the apiserver: each mistake is refused
// with a message that says what to write, and an empty canary gets the
// documented defaults.
func TestCanaryValidation(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	const pods = "spec.behavior.scaleDown.canary.pods: Invalid value: "
	const podsMsg = ": pods must be a count from 1 to 100 or a percent from 1% to 100%, such as 10%"
	const backoff = "spec.behavior.scaleDown.canary.backoff: Invalid value: backoff.initial must not exceed backoff.max"
	cases := map[string]struct {
		canary v1alpha1.Canary
		want   []string
	}{
		"no pods":             {canary: v1alpha1.Canary{Pods: ptrTo(intstr.FromInt32(0))}, want: []string{pods + "0" + podsMsg}},
		"too many pods":       {canary: v1alpha1.Canary{Pods: ptrTo(intstr.FromInt32(101))}, want: []string{pods + "101" + podsMsg}},
		"zero percent":        {canary: v1alpha1.Canary{Pods: ptrTo(intstr.FromString("0%"))}, want: []string{pods + `"0%"` + podsMsg}},
		"a percent above 100": {canary: v1alpha1.Canary{Pods: ptrTo(intstr.FromString("150%"))}, want: []string{pods + `"150%"` + podsMsg}},
		"a word":              {canary: v1alpha1.Canary{Pods: ptrTo(intstr.FromString("one"))}, want: []string{pods + `"one"` + podsMsg}},
		"window too short": {canary: v1alpha1.Canary{Window: &metav1.Duration{Duration: 10 * time.Second}},
			want: []string{`spec.behavior.scaleDown.canary.window: Invalid value: "10s": window must be a duration such as 5m or 1h, between 30s and 24h`}},
		"throttling above 100%": {
			canary: v1alpha1.Canary{Guardrails: &v1alpha1.CanaryGuardrails{CPUThrottlingPercent: ptrTo[int32](101)}},
			want:   []string{"spec.behavior.scaleDown.canary.guardrails.cpuThrottlingPercent: Invalid value: 101: spec.behavior.scaleDown.canary.guardrails.cpuThrottlingPercent in body should be less than or equal to 100"},
		},
		"margin of 0": {
			canary: v1alpha1.Canary{Guardrails: &v1alpha1.CanaryGuardrails{MemoryMarginPercent: ptrTo[int32](0)}},
			want:   []string{"spec.behavior.scaleDown.canary.guardrails.memoryMarginPercent: Invalid value: 0: spec.behavior.scaleDown.canary.guardrails.memoryMarginPercent in body should be greater than or equal to 1"},
		},
		"initial backoff above max": {
			canary: v1alpha1.Canary{Backoff: &v1alpha1.CanaryBackoff{Initial: &metav1.Duration{Duration: 2 * time.Hour}, Max: &metav1.Duration{Duration: time.Hour}}},
			want:   []string{backoff},
		},
		"initial above the default max": {
			canary: v1alpha1.Canary{Backoff: &v1alpha1.CanaryBackoff{Initial: &metav1.Duration{Duration: 48 * time.Hour}}},
			want:   []string{backoff},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := dryRunPolicy(e, tc.canary)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("created: %v; want refused", err)
			}
			if diff := cmp.Diff(tc.want, validationCauses(err)); diff != "" {
				t.Errorf("refusal (-want,+got):\n%s", diff)
			}
		})
	}
	for name, c := range map[string]v1alpha1.Canary{
		"a count":     {Pods: ptrTo(intstr.FromInt32(100))},
		"a percent":   {Pods: ptrTo(intstr.FromString("100%"))},
		"one percent": {Pods: ptrTo(intstr.FromString("1%"))},
		"edges":       {Window: &metav1.Duration{Duration: 24 * time.Hour}, Backoff: &v1alpha1.CanaryBackoff{Initial: &metav1.Duration{Duration: time.Minute}, Max: &metav1.Duration{Duration: time.Minute}}},
	} {
		if err := dryRunPolicy(e, c); err != nil {
			t.Errorf("%s: refused: %v", name, err)
		}
	}
	// An empty canary gets every default.
	p := &v1alpha1.TailorPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "defaults"}, Spec: v1alpha1.TailorPolicySpec{
		TargetRef: &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		Behavior:  &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownRules{Canary: &v1alpha1.Canary{}}},
	}}
	if err := apiClient.Create(e.ctx, p, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	got := p.Spec.Behavior.ScaleDown.Canary
	want := &v1alpha1.Canary{
		Pods: ptrTo(intstr.FromInt32(1)), Window: &metav1.Duration{Duration: 10 * time.Minute},
		Guardrails: &v1alpha1.CanaryGuardrails{OOMKill: ptrTo(true), Restart: ptrTo(true), Readiness: ptrTo(true),
			CPUThrottling: ptrTo(true), CPUThrottlingPercent: ptrTo[int32](20), MemoryNearLimit: ptrTo(true), MemoryMarginPercent: ptrTo[int32](5)},
		Backoff: &v1alpha1.CanaryBackoff{Initial: &metav1.Duration{Duration: time.Hour}, Max: &metav1.Duration{Duration: 24 * time.Hour}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want,+got):\n%s", diff)
	}
	// A policy without a canary gets none.
	p = &v1alpha1.TailorPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "none"}, Spec: v1alpha1.TailorPolicySpec{
		TargetRef: &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
	}}
	if err := apiClient.Create(e.ctx, p, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	if c := p.Spec.Behavior.ScaleDown.Canary; c != nil {
		t.Errorf("a policy without a canary got one by default: %+v", c)
	}
}

func dryRunPolicy(e *env, c v1alpha1.Canary) error {
	p := &v1alpha1.TailorPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "check"}, Spec: v1alpha1.TailorPolicySpec{
		TargetRef: &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		Behavior:  &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownRules{Canary: &c}},
	}}
	return apiClient.Create(context.Background(), p, client.DryRunAll)
}

// An older checkpoint, without a canary, still loads; one with a canary
// keeps it.
func TestCheckpointWithoutCanaryLoads(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	idleDeployment(e)
	e.syncs("web", 2)
	var cp v1alpha1.TailorCheckpoint
	if err := apiClient.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "web"}, &cp); err != nil {
		t.Fatalf("the checkpoint: %v", err)
	}
	if cp.Spec.Canary != nil {
		t.Fatalf("checkpoint has a canary %+v before any", cp.Spec.Canary)
	}
	e.restart()
	if _, err := e.tryReconcile("web"); err != nil {
		t.Errorf("a checkpoint without a canary: %v", err)
	}
	if p := e.getPolicy("web"); condition(p, v1alpha1.ConditionReady).Status != metav1.ConditionTrue {
		t.Errorf("Ready %+v after restoring a checkpoint without a canary", condition(p, v1alpha1.ConditionReady))
	}
}

// validationCauses are the apiserver's reasons for refusing an object, as
// kubectl prints them: "field: message".
func validationCauses(err error) []string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return nil
	}
	var out []string
	for _, c := range status.Status().Details.Causes {
		out = append(out, c.Field+": "+c.Message)
	}
	return out
}

//go:build controller

package controller

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
)

// setReady writes the pod's Ready condition as the kubelet would, at the
// fake clock's time; with restarted, its container has just restarted.
func (e *env) setReady(name string, ready, restarted bool) {
	e.t.Helper()
	p := e.getPod(name)
	now := metav1.NewTime(e.clock.Now())
	if restarted {
		cs := &p.Status.ContainerStatuses[0]
		cs.RestartCount++
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 1, Reason: "Error", StartedAt: cs.State.Running.StartedAt, FinishedAt: now,
		}}
		cs.State.Running.StartedAt = now
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	for i := range p.Status.Conditions {
		if c := &p.Status.Conditions[i]; c.Type == corev1.PodReady && c.Status != status {
			c.Status, c.LastTransitionTime = status, now
		}
	}
	if err := apiClient.Status().Update(e.ctx, p); err != nil {
		e.t.Fatalf("writing Ready=%v of %s: %v", ready, name, err)
	}
}

// startingJVM is pod jvm-0 (app: 500m/256Mi requested, 1/512Mi limits),
// not yet Ready, under policy jvm with a 3x startup boost for 30s after
// Ready.
func startingJVM(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, controllerOptions{})
	e.pod("jvm", builder.Pod("jvm-0").Container(builder.Container("app").Requests("500m", "256Mi").Limits("1", "512Mi")))
	e.setReady("jvm-0", false, false)
	e.policy("jvm", func(s *v1alpha1.TailorPolicySpec) {
		s.StartupBoost = &v1alpha1.StartupBoost{FactorPercent: ptr.To[int32](300), Duration: &metav1.Duration{Duration: 30 * time.Second}}
	})
	return e
}

// A pod created without its boost (no admission policy) is boosted in
// place while it starts, given back its CPU in place once Ready for the
// boost's duration, and boosted again, from what it was since seen to need,
// when its container restarts; what it burnt while boosted is not learnt.
func TestStartupBoostInPlace(t *testing.T) {
	e := startingJVM(t)
	// Starting, it burns all it is given.
	e.source.Set(e.ns, "jvm-0", "app", 1.4, 200*mi)
	e.sync("jvm")
	p := e.getPod("jvm-0")
	if got := requestOf(p, "app", corev1.ResourceCPU) + " " + limitOf(p, "app", corev1.ResourceCPU); got != "1500m 3" {
		t.Fatalf("starting pod cpu %s, want 1500m 3 (3x its 500m/1, in place)", got)
	}
	e.syncs("jvm", 3)
	if got := requestOf(e.getPod("jvm-0"), "app", corev1.ResourceCPU); got != "1500m" {
		t.Fatalf("cpu %s while still starting, want the boost held at 1500m", got)
	}
	if rec := e.getPolicy("jvm").Status.Recommendation; rec != nil {
		if cpu, ok := rec.ContainerRecommendations[0].Target[corev1.ResourceCPU]; ok && cpu.MilliValue() >= 1500 {
			t.Errorf("status.recommendation cpu target %s while the only pod is boosted: new pods would be sized from lent CPU", cpu.String())
		}
	}
	// Ready, it still warms up on the boost, which stays for 30s, then goes.
	e.setReady("jvm-0", true, false)
	e.syncs("jvm", 2)
	if got := requestOf(e.getPod("jvm-0"), "app", corev1.ResourceCPU); got != "1500m" {
		t.Fatalf("cpu %s 20s after Ready, want the boost until 30s", got)
	}
	e.syncs("jvm", 2)
	p = e.getPod("jvm-0")
	req := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
	if req.String() != "500m" {
		t.Fatalf("cpu request %s 40s after Ready; want it given back to the 500m it had (no steady CPU seen yet)", req.String())
	}
	if lim := p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]; lim.MilliValue() != 2*req.MilliValue() {
		t.Errorf("cpu limit %s for request %s: the 1:2 ratio is lost", lim.String(), req.String())
	}
	// The next reading still covers some of the boost (the source's rates
	// span 30s); then it settles to 0.2 cores. Nothing of the 1.4 cores
	// burnt while boosted was learnt: no raise follows.
	e.sync("jvm")
	e.source.Set(e.ns, "jvm-0", "app", 0.2, 200*mi)
	e.syncs("jvm", 3)
	if got := requestOf(e.getPod("jvm-0"), "app", corev1.ResourceCPU); got != "500m" {
		t.Fatalf("cpu request %s after the boost; the CPU burnt while starting was learnt", got)
	}
	// A crash: the restarted container is boosted again.
	e.clock.Step(2 * time.Minute)
	e.setReady("jvm-0", false, true)
	e.sync("jvm")
	boosted := e.getPod("jvm-0").Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
	if m := boosted.MilliValue(); m < 600 || m >= 1500 {
		t.Errorf("restarted container cpu %s; want 3x what 0.2 cores of steady use need, learnt since", boosted.String())
	}
	if ready := condition(e.getPolicy("jvm"), v1alpha1.ConditionReady); ready == nil || ready.Status != metav1.ConditionTrue {
		t.Errorf("Ready condition %+v", ready)
	}
}

// Throttling is dated by its own span, not the CPU rate's: a fraction
// reaching back into the boost (a source may take it from other samples
// than the CPU counter's) was measured under the lent limit and raises
// nothing, while one measured after the boost does.
func TestStartupBoostThrottlingLearntOnlyAfterIt(t *testing.T) {
	e := startingJVM(t)
	e.source.SetThrottled(e.ns, "jvm-0", "app", 2.9, 200*mi, 0.9)
	e.syncs("jvm", 4)
	if got := requestOf(e.getPod("jvm-0"), "app", corev1.ResourceCPU); got != "1500m" {
		t.Fatalf("cpu request %s while starting; want the 3x boost, 1500m, held whatever the throttling", got)
	}
	e.setReady("jvm-0", true, false)
	e.syncs("jvm", 4)
	if got := requestOf(e.getPod("jvm-0"), "app", corev1.ResourceCPU); got != "500m" {
		t.Fatalf("cpu request %s 40s after Ready; want the boost given back to 500m", got)
	}
	// Idle now, with CPU rates over the last 30s only; the throttled
	// fraction still spans three minutes, reaching into the boost. Past
	// the minute the give-back holds resizes off, nothing is raised.
	e.source.SetThrottledOver(e.ns, "jvm-0", "app", 0.2, 200*mi, 0.9, 3*time.Minute)
	e.syncs("jvm", 8)
	if got := requestOf(e.getPod("jvm-0"), "app", corev1.ResourceCPU); got != "500m" {
		t.Fatalf("cpu request %s: throttling measured while boosted was learnt against the limit given back", got)
	}
	// Throttled after the boost: that is the container's own, and raises.
	e.source.SetThrottled(e.ns, "jvm-0", "app", 0.9, 200*mi, 0.9)
	e.syncs("jvm", 2)
	if got := e.getPod("jvm-0").Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]; got.MilliValue() <= 1000 {
		t.Errorf("cpu limit %s after throttling in 90%% of periods at 1 core, past the boost; want it raised", got.String())
	}
}

// A container whose CPU resize would restart it is not boosted, and the
// policy's Ready condition says so.
func TestStartupBoostSkipsRestartingContainers(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.pod("jvm", builder.Pod("jvm-0").Container(builder.Container("app").Requests("500m", "256Mi").Limits("1", "512Mi").
		ResizePolicy(corev1.ResourceCPU, corev1.RestartContainer)))
	e.setReady("jvm-0", false, false)
	e.policy("jvm", func(s *v1alpha1.TailorPolicySpec) {
		s.StartupBoost = &v1alpha1.StartupBoost{FactorPercent: ptr.To[int32](300)}
	})
	e.source.Set(e.ns, "jvm-0", "app", 0.5, 200*mi)
	e.syncs("jvm", 2)
	if got := requestOf(e.getPod("jvm-0"), "app", corev1.ResourceCPU); got != "500m" {
		t.Errorf("cpu %s; a container whose cpu resize restarts it is not boosted", got)
	}
	ready := condition(e.getPolicy("jvm"), v1alpha1.ConditionReady)
	if ready == nil || !strings.Contains(ready.Message, "container app is not boosted: its cpu resizePolicy is RestartContainer") {
		t.Errorf("Ready condition %+v; want it to say app is not boosted and why", ready)
	}
}

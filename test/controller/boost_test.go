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

// A boost the node's room cut is still a boost: once the pod is Ready for
// the boost's duration it goes back to what the pod had, not only a boost
// that reached what was wanted (issue #23, finding 6).
func TestStartupBoostCutByRoomTakenBack(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	small := e.addNode(e.node+"-small", "1200m", "4Gi")
	e.pod("jvm", builder.Pod("jvm-0").Node(small).Container(builder.Container("app").Requests("500m", "256Mi").Limits("1", "512Mi")))
	e.setReady("jvm-0", false, false)
	e.policy("jvm", func(s *v1alpha1.TailorPolicySpec) {
		s.StartupBoost = &v1alpha1.StartupBoost{FactorPercent: ptr.To[int32](300), Duration: &metav1.Duration{Duration: 30 * time.Second}}
	})
	e.source.Set(e.ns, "jvm-0", "app", 1.1, 200*mi)
	// Four syncs (40s) starting, then Ready: the boost's end is past
	// minResizeInterval (1m), which paces its taking back too.
	e.syncs("jvm", 4)
	cut := e.getPod("jvm-0").Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
	if m := cut.MilliValue(); m <= 500 || m >= 1500 {
		t.Fatalf("starting pod cpu %s on a 1200m node; want a boost above 500m cut below the 1500m wanted", cut.String())
	}
	e.setReady("jvm-0", true, false)
	e.syncs("jvm", 4)
	if got := requestOf(e.getPod("jvm-0"), "app", corev1.ResourceCPU); got != "500m" {
		t.Fatalf("cpu request %s 40s after Ready; want the boost cut to %s taken back to 500m", got, cut.String())
	}
}

// A manager restarted between an in-place boost and its end still takes it
// back: what is lent is read from the pod, not remembered (issue #23,
// finding 6).
func TestStartupBoostTakenBackAfterRestart(t *testing.T) {
	e := startingJVM(t)
	e.source.Set(e.ns, "jvm-0", "app", 1.4, 200*mi)
	e.sync("jvm")
	if got := requestOf(e.getPod("jvm-0"), "app", corev1.ResourceCPU); got != "1500m" {
		t.Fatalf("starting pod cpu %s, want 1500m (3x its 500m, in place)", got)
	}
	e.restart()
	e.sync("jvm")
	if got := requestOf(e.getPod("jvm-0"), "app", corev1.ResourceCPU); got != "1500m" {
		t.Fatalf("cpu %s after the restart, still starting; want the boost held at 1500m", got)
	}
	e.setReady("jvm-0", true, false)
	readyAt := e.elapsed()
	e.syncs("jvm", 4)
	e.source.Set(e.ns, "jvm-0", "app", 0.2, 200*mi)
	// The restarted manager does not know the 500m the pod had, and a
	// selector policy has no template: the boost goes back to the
	// recommendation as soon as there is one, with the first figures
	// measured after the boost, and not a stabilization window later.
	for range 4 {
		e.sync("jvm")
		p := e.getPod("jvm-0")
		if req := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; req.MilliValue() <= 500 {
			t.Logf("boost taken back to %s %s after Ready", req.String(), e.elapsed()-readyAt)
			return
		}
	}
	t.Fatalf("cpu request %s 80s after Ready, with steady figures since 40s: the restarted manager forgot the boost",
		requestOf(e.getPod("jvm-0"), "app", corev1.ResourceCPU))
}

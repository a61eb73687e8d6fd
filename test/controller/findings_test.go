//go:build controller

package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/recommend"
	"github.com/tailorhq/tailor/test/builder"
)

// The findings of the controller v2 issue, each a scenario that failed on
// the first controller and holds now.

func requestsOnly(window time.Duration) func(*v1alpha1.TailorPolicySpec) {
	return func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "app", ControlledValues: ptr.To(v1alpha1.ControlledValuesRequestsOnly),
		}}}
		s.Behavior = &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownRules{StabilizationWindow: &metav1.Duration{Duration: window}}}
	}
}

func cpuRequest(p *corev1.Pod) resource.Quantity {
	return p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
}

// Finding 1a: under RequestsOnly the request is what is sized, so a
// request far below the usage is raised at once, whatever the limit.
func TestRequestsOnlyRaisesALowRequestPromptly(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.pod("svc", builder.Pod("svc-0").Container(builder.Container("app").Requests("250m", "256Mi").Limits("3", "512Mi")))
	e.policy("svc", requestsOnly(15*time.Minute))
	e.source.Set(e.ns, "svc-0", "app", 1.5, 200*mi)
	e.syncs("svc", 3)
	if got := cpuRequest(e.getPod("svc-0")); got.Cmp(resource.MustParse("1500m")) < 0 {
		t.Errorf("after 3 syncs using 1.5 cores: cpu request %s, want at least 1500m", got.String())
	}
}

// Finding 1b: a RequestsOnly raise that reaches the limit stops below it
// when equal requests and limits would make the pod Guaranteed (a QoS
// change Kubernetes refuses), and does not report a refusal every sync.
func TestRequestsOnlyRaiseAtTheLimitKeepsTheQoSClass(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	// Memory already has request == limit: cpu alone keeps it Burstable.
	e.pod("svc", builder.Pod("svc-0").Container(builder.Container("app").Requests("500m", "512Mi").Limits("1", "512Mi")))
	e.policy("svc", requestsOnly(15*time.Minute))
	e.source.Set(e.ns, "svc-0", "app", 1.0, 200*mi)
	e.syncs("svc", 10)
	p := e.getPod("svc-0")
	if p.Status.QOSClass != corev1.PodQOSBurstable {
		t.Errorf("QoS class %s, want Burstable", p.Status.QOSClass)
	}
	if got := cpuRequest(p); got.Cmp(resource.MustParse("900m")) < 0 || got.Cmp(resource.MustParse("1")) >= 0 {
		t.Errorf("cpu request %s, want raised to just below the 1-core limit", got.String())
	}
	if n := e.events.count("svc-0", "ResizeRefused"); n > 0 {
		t.Errorf("%d ResizeRefused events in 10 syncs, want none:%s", n, e.events)
	}
}

// Finding 2: without a memory limit, the request is all that stands
// between the working set and eviction under node pressure: it must never
// go below the working set plus the floor headroom (10%), as a limit does.
func TestMemoryRequestWithoutLimitKeepsTheWorkingSetFloor(t *testing.T) {
	// A lean manager: no margin above the memory peak.
	lean := recommend.DefaultConfig()
	lean.MemoryHeadroom, lean.MemoryMinMargin, lean.MemoryJitterMargin = 0, 0, 0
	e := newEnv(t, controllerOptions{Recommender: &lean})
	e.pod("cache", builder.Pod("cache-0").Container(builder.Container("app").Requests("500m", "1Gi").Limits("1", "")))
	e.policy("cache", func(s *v1alpha1.TailorPolicySpec) {
		s.Behavior = &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownRules{StabilizationWindow: &metav1.Duration{Duration: time.Minute}}}
	})
	e.source.Set(e.ns, "cache-0", "app", 0.3, 300*mi)
	floor := resource.NewQuantity(330*mi, resource.BinarySI)
	for range 30 {
		e.sync("cache")
		p := e.getPod("cache-0")
		if got := p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]; got.Cmp(*floor) < 0 {
			t.Fatalf("at +%s: memory request %s, below the 300Mi working set + 10%% (%s)", e.elapsed(), got.String(), floor.String())
		}
	}
}

// Finding 3: with pod-level resources the pod's limits bound its
// containers; tailor must never add a container limit, whether the pod is
// Burstable or, with pod-level requests == limits, Guaranteed.
func TestPodLevelResourcesNeverGainContainerLimits(t *testing.T) {
	cases := map[string]struct {
		pod *builder.PodWrapper
	}{
		"burstable": {
			pod: builder.Pod("pl-0").PodRequests("1", "1Gi").PodLimits("4", "4Gi").Container(builder.Container("app").Requests("500m", "512Mi")),
		},
		"guaranteed": {
			pod: builder.Pod("pl-0").PodRequests("1", "1Gi").PodLimits("1", "1Gi").Container(builder.Container("app").Requests("500m", "512Mi")),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, controllerOptions{})
			e.pod("pl", tc.pod)
			e.policy("pl", func(s *v1alpha1.TailorPolicySpec) {
				s.Behavior = &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownRules{StabilizationWindow: &metav1.Duration{Duration: time.Minute}}}
			})
			check := func(phase string) {
				t.Helper()
				p := e.getPod("pl-0")
				if l := p.Spec.Containers[0].Resources.Limits; len(l) > 0 {
					t.Fatalf("%s at +%s: container app now has limits %v (requests %v); it had none",
						phase, e.elapsed(), l, p.Spec.Containers[0].Resources.Requests)
				}
			}
			// Within the pod's 1-core request: a raise of the container's.
			e.source.Set(e.ns, "pl-0", "app", 0.8, 300*mi)
			for range 12 {
				e.sync("pl")
				check("hot")
			}
			// Idle past the 30-minute cpu peak window: a lowering.
			e.source.Set(e.ns, "pl-0", "app", 0.05, 100*mi)
			for range 200 {
				e.sync("pl")
				check("idle")
			}
			if gen := e.getPod("pl-0").Generation; gen < 3 {
				t.Errorf("pod generation %d: the scenario wants a raise and a lowering to have been sent; status: %+v", gen, e.getPolicy("pl").Status.Conditions)
			}
		})
	}
}

// Finding 5a: what was learned outlives the manager: a memory peak seen
// before a restart still holds memory up after it.
func TestRestartKeepsTheMemoryPeak(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.pod("db", builder.Pod("db-0").Container(builder.Container("app").Requests("500m", "512Mi").Limits("1", "1Gi")))
	e.policy("db", func(s *v1alpha1.TailorPolicySpec) {
		onlyResource(corev1.ResourceMemory)(s)
		s.Behavior = &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownRules{StabilizationWindow: &metav1.Duration{Duration: 2 * time.Minute}}}
	})
	// A 700Mi peak: the request is raised to it (770Mi: the working set
	// plus 10%), and the limit held at the tail (the peak and the 256Mi
	// least margin), 1Gi here, which the pod has.
	e.source.Set(e.ns, "db-0", "app", 0.5, 700*mi)
	e.syncs("db", 6)
	e.source.Set(e.ns, "db-0", "app", 0.5, 100*mi)
	e.syncs("db", 6)
	if req, lim := requestOf(e.getPod("db-0"), "app", corev1.ResourceMemory), limitOf(e.getPod("db-0"), "app", corev1.ResourceMemory); req != "770Mi" || lim != "1Gi" {
		t.Fatalf("before the restart: memory %s/%s, want 770Mi/1Gi for the 700Mi peak", req, lim)
	}
	e.restart()
	restartAt := e.elapsed()
	// Forgotten, the peak would let the request fall to the 100Mi used
	// once the 2-minute window passed, and the limit with it.
	floor, tail := resource.NewQuantity(700*mi, resource.BinarySI), resource.NewQuantity(956*mi, resource.BinarySI)
	for range 30 {
		e.sync("db")
		c := e.getPod("db-0").Spec.Containers[0].Resources
		req, lim := c.Requests[corev1.ResourceMemory], c.Limits[corev1.ResourceMemory]
		if req.Cmp(*floor) < 0 || lim.Cmp(*tail) < 0 {
			t.Fatalf("%s after the restart: memory %s/%s, below what the 700Mi peak seen before it needs (%s/%s)",
				e.elapsed()-restartAt, req.String(), lim.String(), floor.String(), tail.String())
		}
	}
	var cp v1alpha1.TailorCheckpoint
	if err := apiClient.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "db"}, &cp); err != nil {
		t.Fatalf("the checkpoint: %v", err)
	}
	if len(cp.Spec.Containers) != 1 || cp.Spec.Containers[0].Name != "app" || len(cp.OwnerReferences) != 1 {
		t.Errorf("checkpoint %+v, want one entry for app, owned by the policy", cp.Spec)
	}
}

// Finding 5b: a lowering whose stabilization window was nearly over at a
// restart comes when that window ends, not a whole window after it.
func TestRestartDoesNotRestartTheStabilizationWindow(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.pod("web", webPod("web-0"))
	window := 5 * time.Minute
	e.policy("web", func(s *v1alpha1.TailorPolicySpec) {
		onlyResource(corev1.ResourceCPU)(s)
		s.Behavior = &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownRules{StabilizationWindow: &metav1.Duration{Duration: window}}}
	})
	e.source.Set(e.ns, "web-0", "app", 0.02, 100*mi)
	// 4m30s of the 5m window, then a restart.
	e.syncs("web", 27)
	if p := e.getPod("web-0"); p.Generation != 1 {
		t.Fatalf("lowered before its window ended (generation %d)", p.Generation)
	}
	e.restart()
	// The window ends 30s later; allow two more syncs.
	e.syncs("web", 5)
	if p := e.getPod("web-0"); p.Generation == 1 {
		t.Errorf("at +%s, %s after the window ended: not lowered; the restart started a new window", e.elapsed(), e.elapsed()-window)
	}
}

// Finding 6: tailor_resizes_total and events count resizes, not syncs:
// a resize that stays refused or deferred for 5 syncs counts once.
func TestHeldResizesCountOnce(t *testing.T) {
	cases := map[string]struct {
		setup      func(e *env) string
		result     string
		wantEvent  string
		wantBlockd string
	}{
		"refused: the apiserver refuses a pod-level resize the node cannot do": {
			setup: func(e *env) string {
				// A node whose kubelet does not declare pod-level resize.
				old := e.addNodeFrom(builder.Node(e.node+"-old").Allocatable("8", "32Gi").Ready(corev1.ConditionTrue).DeclaredFeatures())
				e.pod("svc", builder.Pod("svc-0").Node(old).PodRequests("500m", "1Gi").PodLimits("1", "2Gi").Container(builder.Container("app")))
				e.policy("svc", nil)
				e.source.Set(e.ns, "svc-0", "app", 0.9, 200*mi)
				return "svc"
			},
			result: "refused", wantEvent: "ResizeRefused",
		},
		"deferred: no room on the node": {
			setup: func(e *env) string {
				small := e.addNode(e.node+"-small", "2", "8Gi")
				e.pod("svc", builder.Pod("svc-0").Node(small).Container(builder.Container("app").Requests("1500m", "256Mi").Limits("1500m", "512Mi")))
				e.pod("other", builder.Pod("other-0").Node(small).Container(builder.Container("app").Requests("500m", "256Mi")))
				e.policy("svc", onlyResource(corev1.ResourceCPU))
				e.source.SetThrottled(e.ns, "svc-0", "app", 1.5, 200*mi, 0.8)
				return "svc"
			},
			result: "deferred", wantEvent: "ResizeDeferred",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, controllerOptions{})
			pol := tc.setup(e)
			e.sync(pol)
			before := resizesTotal(t, e.ns, pol, tc.result)
			if before != 1 {
				t.Fatalf("tailor_resizes_total{result=%q} = %v after the first sync, want 1 (is the resize %s?):%s", tc.result, before, tc.result, e.events)
			}
			if p := e.getPod("svc-0"); p.Generation != 1 {
				t.Fatalf("the resize was sent (generation %d): the scenario does not hold it", p.Generation)
			}
			e.syncs(pol, 5)
			if got := resizesTotal(t, e.ns, pol, tc.result); got != 1 {
				t.Errorf("tailor_resizes_total{result=%q} = %v after 6 syncs of one held resize, want 1", tc.result, got)
			}
			if n := e.events.count("svc-0", tc.wantEvent); n != 1 {
				t.Errorf("%d %s events after 6 syncs of one held resize, want 1:%s", n, tc.wantEvent, e.events)
			}
		})
	}
}

// Like a restart, a spec edit (here an unrelated maxAllowed change) must
// not forget the usage learned: a memory peak seen before still holds.
func TestPolicyEditKeepsTheMemoryPeak(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.pod("db", builder.Pod("db-0").Container(builder.Container("app").Requests("500m", "512Mi").Limits("1", "1Gi")))
	e.policy("db", func(s *v1alpha1.TailorPolicySpec) {
		s.Behavior = &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownRules{StabilizationWindow: &metav1.Duration{Duration: 2 * time.Minute}}}
	})
	e.source.Set(e.ns, "db-0", "app", 0.5, 700*mi)
	e.syncs("db", 6)
	e.source.Set(e.ns, "db-0", "app", 0.5, 100*mi)
	e.syncs("db", 6)
	pol := e.getPolicy("db")
	pol.Spec.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
		ContainerName: "app", MaxAllowed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
	}}}
	if err := apiClient.Update(e.ctx, pol); err != nil {
		t.Fatalf("edit policy: %v", err)
	}
	editAt := e.elapsed()
	floor := resource.NewQuantity(735*mi, resource.BinarySI)
	for range 30 {
		e.sync("db")
		lim := e.getPod("db-0").Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]
		if lim.Cmp(*floor) < 0 {
			t.Fatalf("%s after the edit: memory limit %s, below the 700Mi peak seen before it (+5%%: %s)",
				e.elapsed()-editAt, lim.String(), floor.String())
		}
	}
}

// A new replica starts from its workload's history: what its siblings
// taught sizes it at its first sync, before it has shown any usage of its
// own worth a raise.
func TestNewReplicaStartsFromTheWorkloadsHistory(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	// Its limit is the 600Mi it uses at its peak: a working set above its
	// limit is no figure a container can have, and is held as garbage.
	e.pod("api", builder.Pod("api-0").Container(builder.Container("app").Requests("500m", "256Mi").Limits("1", "600Mi")))
	e.policy("api", onlyResource(corev1.ResourceMemory))
	// api-0 peaks at 600Mi: the workload's request is that peak (api-0's
	// own 660Mi is its working set plus 10%), its limit the tail, 856Mi
	// (the peak and the 256Mi least margin).
	e.source.Set(e.ns, "api-0", "app", 0.2, 600*mi)
	e.syncs("api", 3)
	if req, lim := requestOf(e.getPod("api-0"), "app", corev1.ResourceMemory), limitOf(e.getPod("api-0"), "app", corev1.ResourceMemory); req != "660Mi" || lim != "856Mi" {
		t.Fatalf("api-0 memory %s/%s, want 660Mi/856Mi", req, lim)
	}
	// A scale-out: api-1 starts at the template's 256Mi and uses 50Mi.
	e.pod("api", builder.Pod("api-1").Container(builder.Container("app").Requests("500m", "256Mi").Limits("1", "512Mi")))
	e.source.Set(e.ns, "api-1", "app", 0.2, 50*mi)
	e.sync("api")
	if req, lim := requestOf(e.getPod("api-1"), "app", corev1.ResourceMemory), limitOf(e.getPod("api-1"), "app", corev1.ResourceMemory); req != "600Mi" || lim != "856Mi" {
		t.Errorf("api-1 memory %s/%s after its first sync, want 600Mi/856Mi from its workload's history (its own 50Mi would ask for 50Mi/306Mi)", req, lim)
	}
}

// A container the workload no longer runs is forgotten once nothing it
// taught is still within the recommender's windows: not in memory, not in
// the checkpoint.
func TestGoneContainerIsForgottenOnceItsWindowsPass(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.pod("api", builder.Pod("api-0").Container(builder.Container("app").Requests("500m", "256Mi")).
		Container(builder.Container("old").Requests("100m", "64Mi")))
	e.policy("api", nil)
	e.source.Set(e.ns, "api-0", "app", 0.2, 100*mi)
	e.source.Set(e.ns, "api-0", "old", 0.1, 30*mi)
	e.syncs("api", 3)
	// A rollout drops the container "old".
	e.deletePod("api-0")
	e.pod("api", builder.Pod("api-1").Container(builder.Container("app").Requests("500m", "256Mi")))
	e.source.Set(e.ns, "api-1", "app", 0.2, 100*mi)
	names := func() []string {
		var cp v1alpha1.TailorCheckpoint
		if err := apiClient.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "api"}, &cp); err != nil {
			t.Fatalf("the checkpoint: %v", err)
		}
		var out []string
		for _, c := range cp.Spec.Containers {
			out = append(out, c.Name)
		}
		return out
	}
	// A day later "old" is still remembered: its memory peak is within
	// the 48h window.
	for range 24 {
		e.clock.Step(time.Hour)
		e.sync("api")
	}
	if got := names(); len(got) != 2 {
		t.Fatalf("checkpoint after a day: %v, want app and old", got)
	}
	for range 25 {
		e.clock.Step(time.Hour)
		e.sync("api")
	}
	if got := names(); len(got) != 1 || got[0] != "app" {
		t.Errorf("checkpoint 49h after the last sample of old: %v, want only app", got)
	}
	var recs []string
	for _, r := range e.getPolicy("api").Status.Recommendation.ContainerRecommendations {
		recs = append(recs, r.ContainerName)
	}
	if len(recs) != 1 || recs[0] != "app" {
		t.Errorf("status recommendations for %v, want only app", recs)
	}
}

// tailor_resizes_in_flight counts the policy's pods whose resize the
// kubelet has not finished, whichever finishes first: one pod's resize
// done does not zero it while the other's is still applied.
func TestResizesInFlightFollowsThePods(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.pod("web", webPod("web-0"))
	e.pod("web", webPod("web-1"))
	e.policy("web", func(s *v1alpha1.TailorPolicySpec) {
		s.Behavior = &v1alpha1.Behavior{MaxConcurrentResizes: ptr.To[int32](2)}
	})
	for _, p := range []string{"web-0", "web-1"} {
		e.source.SetThrottled(e.ns, p, "app", 1.0, 200*mi, 0.5)
	}
	inFlight := func() float64 {
		return metricValue(t, "tailor_resizes_in_flight", map[string]string{"namespace": e.ns, "policy": "web"})
	}
	e.clock.Step(syncPeriod)
	e.reconcile("web")
	if got := inFlight(); got != 2 {
		t.Fatalf("in flight after both resizes were sent: %v, want 2", got)
	}
	// No longer throttled: nothing more to send.
	for _, p := range []string{"web-0", "web-1"} {
		e.source.Set(e.ns, p, "app", 0.8, 200*mi)
	}
	// The kubelet finishes web-0 only.
	done := e.getPod("web-0")
	if err := e.kubelet.answer(e.ctx, done); err != nil {
		t.Fatal(err)
	}
	if err := apiClient.Status().Update(e.ctx, done); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(syncPeriod)
	e.reconcile("web")
	if got := inFlight(); got != 1 {
		t.Errorf("in flight with web-0 done and web-1 still applying: %v, want 1", got)
	}
	e.kubelet.Sync(t, e.ns)
	e.clock.Step(syncPeriod)
	e.reconcile("web")
	if got := inFlight(); got != 0 {
		t.Errorf("in flight with both done: %v, want 0", got)
	}
}

// A kubelet that does not report status.observedGeneration (1.33 without
// PodObservedGenerationTracking): a resize it has not applied yet is still
// in flight, so maxConcurrentResizes holds, and its outcome is reported once
// the containers' reported resources match the spec.
func TestKubeletWithoutObservedGeneration(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.pod("api", webPod("api-0"))
	e.pod("api", webPod("api-1"))
	e.policy("api", nil)
	for _, p := range []string{"api-0", "api-1"} {
		e.source.SetThrottled(e.ns, p, "app", 1.0, 200*mi, 0.5)
	}
	forget := func() {
		for _, name := range []string{"api-0", "api-1"} {
			p := e.getPod(name)
			p.Status.ObservedGeneration = 0
			for i := range p.Status.Conditions {
				p.Status.Conditions[i].ObservedGeneration = 0
			}
			if err := apiClient.Status().Update(e.ctx, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	forget()
	e.clock.Step(syncPeriod)
	e.reconcile("api")
	e.clock.Step(syncPeriod)
	e.reconcile("api")
	resized := 0
	for _, name := range []string{"api-0", "api-1"} {
		if e.getPod(name).Generation > 1 {
			resized++
		}
	}
	if resized != 1 {
		t.Fatalf("%d pods resized before the kubelet applied the first, maxConcurrentResizes 1", resized)
	}
	// The kubelet applies it, still without observedGeneration.
	e.kubelet.Sync(t, e.ns)
	forget()
	e.clock.Step(syncPeriod)
	e.reconcile("api")
	var done bool
	for _, ps := range e.getPolicy("api").Status.Pods {
		done = done || ps.Result == v1alpha1.ResizeResultDone
	}
	if !done {
		t.Errorf("status.pods %+v: the applied resize is not reported Done", e.getPolicy("api").Status.Pods)
	}
}

// A restarted manager sees the pods' last terminations again, now under the
// memory limit raised because of them: an OOM kill its checkpoint already
// holds must not raise memory a second time.
func TestRestartDoesNotCountAnOOMKillTwice(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.pod("db", builder.Pod("db-0").Container(builder.Container("app").Requests("500m", "512Mi").Limits("1", "1Gi")))
	e.policy("db", onlyResource(corev1.ResourceMemory))
	e.source.Set(e.ns, "db-0", "app", 0.3, 300*mi)
	e.syncs("db", 2)
	// The kernel kills it at its 1Gi limit.
	e.oomKill("db-0")
	// Past minResizeInterval (the raise for the usage came a sync ago) and
	// the checkpoint interval: the kill is answered and checkpointed.
	e.clock.Step(2 * time.Minute)
	e.syncs("db", 3)
	after := requestOf(e.getPod("db-0"), "app", corev1.ResourceMemory)
	if after == "556Mi" {
		t.Fatalf("memory request %s: the OOM kill was not answered", after)
	}
	e.clock.Step(2 * time.Minute)
	e.syncs("db", 2)
	e.restart()
	e.syncs("db", 6)
	if got := requestOf(e.getPod("db-0"), "app", corev1.ResourceMemory); got != after {
		t.Errorf("memory request %s after the restart, was %s after the OOM kill: the kill was counted again under the raised limit", got, after)
	}
}

// A cluster without the TailorCheckpoint CRD (an upgrade that did not apply
// it): tailor resizes as ever, and Ready says what it cannot keep.
func TestWithoutTheCheckpointCRD(t *testing.T) {
	noKind := func(obj client.Object) error {
		if _, ok := obj.(*v1alpha1.TailorCheckpoint); ok {
			return &meta.NoKindMatchError{GroupKind: v1alpha1.GroupVersion.WithKind("TailorCheckpoint").GroupKind(), SearchedVersions: []string{"v1alpha1"}}
		}
		return nil
	}
	c := interceptor.NewClient(apiClient, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := noKind(obj); err != nil {
				return err
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := noKind(obj); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	e := newEnv(t, controllerOptions{Client: c})
	e.pod("web", webPod("web-0"))
	e.policy("web", nil)
	e.source.SetThrottled(e.ns, "web-0", "app", 1.0, 200*mi, 0.5)
	e.syncs("web", 2)
	if p := e.getPod("web-0"); p.Generation != 2 {
		t.Errorf("pod generation %d: not resized without the checkpoint CRD", p.Generation)
	}
	r := condition(e.getPolicy("web"), v1alpha1.ConditionReady)
	if r == nil || r.Status != metav1.ConditionTrue || !strings.Contains(r.Message, "TailorCheckpoint CRD is not installed") {
		t.Errorf("Ready = %+v, want True and saying the checkpoint CRD is missing", r)
	}
}

//go:build controller

package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
)

const mi = 1 << 20

// webPod is one container "app": 500m/256Mi requested, 1/512Mi limits.
func webPod(name string) *builder.PodWrapper {
	return builder.Pod(name).Container(builder.Container("app").Requests("500m", "256Mi").Limits("1", "512Mi"))
}

// cappedWeb makes pod web-0 and policy web, whose app container may
// have at most 1500m of CPU.
func cappedWeb(e *env) {
	e.t.Helper()
	e.pod("web", webPod("web-0"))
	e.policy("web", func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "app",
			MaxAllowed:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")},
		}}}
	})
}

func TestThrottledRequestsAndLimitsRaisedWithinMaxAllowed(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	cappedWeb(e)
	// At its 1-core limit and throttled in half the periods: the demand is
	// above the limit, by more than maxAllowed leaves room for.
	e.source.SetThrottled(e.ns, "web-0", "app", 1.0, 200*mi, 0.5)
	e.sync("web")

	p := e.getPod("web-0")
	// maxAllowed bounds the request, which the recommendation sizes, and
	// RequestsAndLimits keeps the workload's request/limit ratio (1:2).
	if got := requestOf(p, "app", corev1.ResourceCPU); got != "1500m" {
		t.Errorf("cpu request = %s, want 1500m (maxAllowed)", got)
	}
	if got := limitOf(p, "app", corev1.ResourceCPU); got != "3" {
		t.Errorf("cpu limit = %s, want 3", got)
	}
	// Memory stays: the request is sized from the typical peak (200Mi,
	// under the 256Mi it has; a lowering waits for its window) and the
	// limit from the tail (200Mi + 5% + the 256Mi least margin, 466Mi,
	// under the 512Mi it has; a lower limit waits for the request).
	if req, lim := requestOf(p, "app", corev1.ResourceMemory), limitOf(p, "app", corev1.ResourceMemory); req != "256Mi" || lim != "512Mi" {
		t.Errorf("memory = %s/%s, want 256Mi/512Mi unchanged", req, lim)
	}
	// The controller sees the kubelet's answer on the next sync.
	e.sync("web")
	pol := e.getPolicy("web")
	if len(pol.Status.Pods) != 1 || pol.Status.Pods[0].Result != v1alpha1.ResizeResultDone {
		t.Errorf("status.pods = %+v, want web-0 Done", pol.Status.Pods)
	}
	// Still throttled at the cap: no resize beyond maxAllowed, however long.
	e.syncs("web", 30)
	if p := e.getPod("web-0"); p.Generation != 2 {
		t.Errorf("pod generation = %d after 30 more syncs at maxAllowed, want 2 (one resize)", p.Generation)
	}
	if n := e.events.count("web-0", "Resized"); n != 1 {
		t.Errorf("%d Resized events, want 1:%s", n, e.events)
	}
	if got := resizesTotal(t, e.ns, "web", "sent"); got != 1 {
		t.Errorf("tailor_resizes_total{result=sent} = %v, want 1", got)
	}
}

// A throttled fraction is read against the limit the pod has now, so one
// whose span reaches back past a resize, measured partly under the limit
// before it, raises nothing; once the fraction is the new limit's own, it
// raises again.
func TestThrottlingAcrossAResizeIsNotReadAgainstTheNewLimit(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.pod("web", webPod("web-0"))
	e.policy("web", func(s *v1alpha1.TailorPolicySpec) {
		s.Behavior = &v1alpha1.Behavior{MinResizeInterval: &metav1.Duration{Duration: syncPeriod}}
	})
	// Throttled in every period at 1 core, over the scripted 30s spans.
	e.source.SetThrottled(e.ns, "web-0", "app", 1.0, 200*mi, 1)
	e.sync("web")
	raised := limitOf(e.getPod("web-0"), "app", corev1.ResourceCPU)
	if raised == "1" {
		t.Fatalf("a container throttled in every period at its 1-core limit was not raised")
	}
	// The next three syncs' fractions began at or before the resize.
	e.syncs("web", 3)
	if got := limitOf(e.getPod("web-0"), "app", corev1.ResourceCPU); got != raised {
		t.Fatalf("cpu limit %s -> %s within 30s of the raise: a fraction measured partly under 1 core was read against %s", raised, got, raised)
	}
	e.sync("web")
	if got := limitOf(e.getPod("web-0"), "app", corev1.ResourceCPU); got == raised {
		t.Errorf("cpu limit still %s with every period since the raise throttled", got)
	}
}

func TestOffModeRecommendsAndNeverResizes(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.pod("batch", webPod("batch-0"))
	e.policy("batch", func(s *v1alpha1.TailorPolicySpec) {
		s.UpdatePolicy = &v1alpha1.UpdatePolicy{UpdateMode: v1alpha1.UpdateModeOff}
	})
	// Hot for a minute, then idle for 20: a raise, then past a lowering's
	// stabilization window.
	e.source.SetThrottled(e.ns, "batch-0", "app", 1.0, 400*mi, 0.9)
	e.syncs("batch", 6)
	pol := e.getPolicy("batch")
	if pol.Status.Recommendation == nil || len(pol.Status.Recommendation.ContainerRecommendations) != 1 {
		t.Fatalf("no recommendation in status: %+v", pol.Status)
	}
	target := pol.Status.Recommendation.ContainerRecommendations[0].Target[corev1.ResourceCPU]
	if target.Cmp(resource.MustParse("1")) <= 0 {
		t.Errorf("cpu target %s for a throttled container at its 1-core limit, want above 1", target.String())
	}
	e.source.Set(e.ns, "batch-0", "app", 0.01, 50*mi)
	e.syncs("batch", 120)
	if p := e.getPod("batch-0"); p.Generation != 1 {
		t.Errorf("pod generation = %d, want 1: Off never resizes", p.Generation)
	}
	if got := resizesTotal(t, e.ns, "batch", "sent"); got != 0 {
		t.Errorf("tailor_resizes_total{result=sent} = %v, want 0", got)
	}
	if c := condition(e.getPolicy("batch"), v1alpha1.ConditionRecommendationProvided); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("RecommendationProvided = %+v, want True", c)
	}
}

// The pod changes after the controller read it and before its resize is
// applied: the apiserver answers 409, and the controller plans again.
func TestConflictIsRetriedNotRefused(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.pod("api", webPod("api-0"))
	e.policy("api", nil)
	e.source.SetThrottled(e.ns, "api-0", "app", 1.0, 200*mi, 0.5)
	e.source.OnNextRead(func() {
		// Another writer (a label controller, a person) touches the pod.
		p := e.getPod("api-0")
		p.Labels["touched"] = "yes"
		if err := apiClient.Update(context.Background(), p); err != nil {
			t.Errorf("touching the pod: %v", err)
		}
	})
	e.clock.Step(syncPeriod)
	res := e.reconcile("api")
	if p := e.getPod("api-0"); p.Generation != 1 {
		t.Fatalf("pod generation %d: the resize planned from a stale pod was applied", p.Generation)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > syncPeriod {
		t.Errorf("RequeueAfter = %v after a conflict, want a prompt retry", res.RequeueAfter)
	}
	if n := e.events.count("", "ResizeRefused"); n != 0 {
		t.Errorf("a conflict was reported as a refusal:%s", e.events)
	}
	if got := resizesTotal(t, e.ns, "api", "refused"); got != 0 {
		t.Errorf("tailor_resizes_total{result=refused} = %v after a conflict, want 0", got)
	}
	if c := condition(e.getPolicy("api"), v1alpha1.ConditionResizesBlocked); c != nil && c.Status == metav1.ConditionTrue {
		t.Errorf("ResizesBlocked = %+v after a conflict, want not blocked", c)
	}
	// The retry plans from the new pod and goes through.
	e.clock.Step(res.RequeueAfter)
	e.reconcile("api")
	if p := e.getPod("api-0"); p.Generation != 2 || limitOf(p, "app", corev1.ResourceCPU) == "1" {
		t.Errorf("after the retry: generation %d, cpu limit %s; want the raise applied", p.Generation, limitOf(p, "app", corev1.ResourceCPU))
	}
}

// A pod deleted after the controller listed it, before its resize: that is
// not an error, the sync still serves the policy's other pods, and the next
// syncs carry on without it.
func TestPodDeletedMidSyncServesTheOthers(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.pod("api", webPod("api-0"))
	e.pod("api", webPod("api-1"))
	e.policy("api", func(s *v1alpha1.TailorPolicySpec) {
		s.Behavior = &v1alpha1.Behavior{MaxConcurrentResizes: ptr.To[int32](2)}
	})
	for _, p := range []string{"api-0", "api-1"} {
		e.source.SetThrottled(e.ns, p, "app", 1.0, 200*mi, 0.5)
	}
	e.source.OnNextRead(func() { e.deletePod("api-0") })
	e.clock.Step(syncPeriod)
	if _, err := e.tryReconcile("api"); err != nil {
		t.Errorf("reconcile failed because a pod went away mid-sync: %v", err)
	}
	if p := e.getPod("api-1"); p.Generation != 2 {
		t.Errorf("api-1 generation %d: the other pod was not resized in the same sync", p.Generation)
	}
	// The kubelet answers; the next syncs see it.
	e.syncs("api", 2)
	pol := e.getPolicy("api")
	if len(pol.Status.Pods) != 1 || pol.Status.Pods[0].PodName != "api-1" || pol.Status.Pods[0].Result != v1alpha1.ResizeResultDone {
		t.Errorf("status.pods = %+v, want only api-1, Done", pol.Status.Pods)
	}
	if n := e.events.count("", "ResizeRefused") + e.events.count("", "ResizeFailed"); n != 0 {
		t.Errorf("a vanished pod was reported as a refused or failed resize:%s", e.events)
	}
}

// Pods whose node object is gone (the node was deleted; its pods are not
// yet garbage collected) must not stop the policy's other pods.
func TestNodeDeletedUnderPods(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	gone := e.addNode(e.node+"-gone", "8", "32Gi")
	e.pod("api", webPod("api-0").Node(gone))
	e.pod("api", webPod("api-1"))
	e.policy("api", func(s *v1alpha1.TailorPolicySpec) {
		s.Behavior = &v1alpha1.Behavior{MaxConcurrentResizes: ptr.To[int32](2)}
	})
	if err := apiClient.Delete(e.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: gone}}); err != nil {
		t.Fatalf("delete node: %v", err)
	}
	for _, p := range []string{"api-0", "api-1"} {
		e.source.SetThrottled(e.ns, p, "app", 1.0, 200*mi, 0.5)
	}
	for range 3 {
		e.clock.Step(syncPeriod)
		if _, err := e.tryReconcile("api"); err != nil {
			t.Errorf("reconcile at +%s failed on a pod whose node is gone: %v", e.elapsed(), err)
		}
	}
	if p := e.getPod("api-1"); p.Generation != 2 {
		t.Errorf("api-1 (on a live node) generation %d, want 2: resized whatever its neighbour's node", p.Generation)
	}
	if p := e.getPod("api-0"); p.Generation != 1 {
		t.Errorf("api-0 (node gone) generation %d, want 1: no resize for a pod no kubelet runs", p.Generation)
	}
	if c := condition(e.getPolicy("api"), v1alpha1.ConditionReady); c == nil {
		t.Errorf("no status written while a pod's node is gone")
	}
}

// An edit of a policy's bounds moves the pods outside them at the next
// sync, even when usage alone would hold them where they are: a raised
// minAllowed raises, a lowered maxAllowed lowers (on fresh usage).
func TestBoundsEditMovesPodsOutsideThem(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.pod("web", webPod("web-0"))
	e.policy("web", func(s *v1alpha1.TailorPolicySpec) {
		s.Behavior = &v1alpha1.Behavior{MinResizeInterval: &metav1.Duration{Duration: time.Second}}
	})
	// Usage that 500m/256Mi holds (lowering memory waits for its window).
	e.source.Set(e.ns, "web-0", "app", 0.45, 10*mi)
	e.syncs("web", 3)
	if p := e.getPod("web-0"); p.Generation != 1 {
		t.Fatalf("a pod that fits its usage was resized: %s", e.events)
	}
	edit := func(mutate func(*v1alpha1.ContainerPolicy)) {
		t.Helper()
		pol := e.getPolicy("web")
		if pol.Spec.ResourcePolicy == nil {
			pol.Spec.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{ContainerName: "*"}}}
		}
		mutate(&pol.Spec.ResourcePolicy.ContainerPolicies[0])
		if err := apiClient.Update(e.ctx, pol); err != nil {
			t.Fatalf("edit policy: %v", err)
		}
		// Past minResizeInterval: the bound, not the pace, is tested.
		e.clock.Step(2 * time.Second)
		e.sync("web")
	}
	edit(func(c *v1alpha1.ContainerPolicy) {
		c.MinAllowed = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("400Mi")}
	})
	if got := requestOf(e.getPod("web-0"), "app", corev1.ResourceMemory); got != "400Mi" {
		t.Errorf("after minAllowed.memory 400Mi: memory request %s, want 400Mi; events:%s", got, e.events)
	}
	edit(func(c *v1alpha1.ContainerPolicy) {
		c.MaxAllowed = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("450m")}
	})
	if got := requestOf(e.getPod("web-0"), "app", corev1.ResourceCPU); got != "450m" {
		t.Errorf("after maxAllowed.cpu 450m: cpu request %s, want 450m; events:%s", got, e.events)
	}
	// No fresh usage: memory is not lowered to a new maxAllowed, since
	// nothing says what the container uses now.
	e.source.Fail(errors.New("connection refused"))
	edit(func(c *v1alpha1.ContainerPolicy) {
		c.MinAllowed = nil
		c.MaxAllowed = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("300Mi")}
	})
	if got := requestOf(e.getPod("web-0"), "app", corev1.ResourceMemory); got != "400Mi" {
		t.Errorf("memory lowered to a new maxAllowed without usage: request %s, want 400Mi still", got)
	}
}

func TestPolicyEditAndDeletion(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.pod("web", webPod("web-0"))
	e.policy("web", func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "app", Mode: ptr.To(v1alpha1.ContainerModeOff),
		}}}
	})
	e.source.SetThrottled(e.ns, "web-0", "app", 1.0, 200*mi, 0.5)
	e.syncs("web", 3)
	if p := e.getPod("web-0"); p.Generation != 1 {
		t.Fatalf("container mode Off, yet the pod was resized (generation %d)", p.Generation)
	}
	// The user turns the container on and caps it.
	pol := e.getPolicy("web")
	pol.Spec.ResourcePolicy.ContainerPolicies[0].Mode = nil
	pol.Spec.ResourcePolicy.ContainerPolicies[0].MaxAllowed = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1200m")}
	if err := apiClient.Update(e.ctx, pol); err != nil {
		t.Fatalf("edit policy: %v", err)
	}
	e.sync("web")
	if got := requestOf(e.getPod("web-0"), "app", corev1.ResourceCPU); got != "1200m" {
		t.Errorf("after the edit: cpu request %s, want 1200m (the new maxAllowed)", got)
	}
	if got := e.getPolicy("web").Status.ObservedGeneration; got != pol.Generation {
		t.Errorf("status.observedGeneration = %d, want %d", got, pol.Generation)
	}

	// Deleted: the next syncs are quiet, and the pod stays as it is however
	// hot it runs.
	if err := apiClient.Delete(e.ctx, pol); err != nil {
		t.Fatalf("delete policy: %v", err)
	}
	e.source.SetThrottled(e.ns, "web-0", "app", 1.2, 200*mi, 0.9)
	gen := e.getPod("web-0").Generation
	for range 12 {
		e.clock.Step(syncPeriod)
		if _, err := e.tryReconcile("web"); err != nil {
			t.Fatalf("reconcile of a deleted policy: %v", err)
		}
	}
	if p := e.getPod("web-0"); p.Generation != gen {
		t.Errorf("pod resized after its policy was deleted: generation %d -> %d", gen, p.Generation)
	}
}

// The policy is deleted while a sync is under way: its status write finds
// it gone, which is not an error worth a retry.
func TestPolicyDeletedMidSync(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.pod("web", webPod("web-0"))
	pol := e.policy("web", nil)
	e.source.Set(e.ns, "web-0", "app", 0.2, 200*mi)
	e.sync("web")
	e.source.OnNextRead(func() {
		if err := apiClient.Delete(context.Background(), pol); err != nil {
			t.Errorf("delete policy: %v", err)
		}
	})
	e.clock.Step(syncPeriod)
	if _, err := e.tryReconcile("web"); err != nil {
		t.Errorf("reconcile of a policy deleted mid-sync: %v", err)
	}
}

// An apiserver error on one pod's resize (a failing webhook, a timeout)
// holds that pod only: the policy's other pods are resized in the same
// sync, status says what failed, and the sync is retried.
func TestOnePodsAPIErrorHoldsOnlyThatPod(t *testing.T) {
	failing := interceptor.NewClient(apiClient, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if obj.GetName() == "api-0" {
				return apierrors.NewInternalError(errors.New("webhook tailor-test.example failed"))
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	e := newEnv(t, controllerOptions{Resizer: failing})
	e.pod("api", webPod("api-0"))
	e.pod("api", webPod("api-1"))
	e.policy("api", func(s *v1alpha1.TailorPolicySpec) {
		s.Behavior = &v1alpha1.Behavior{MaxConcurrentResizes: ptr.To[int32](2)}
	})
	for _, p := range []string{"api-0", "api-1"} {
		e.source.SetThrottled(e.ns, p, "app", 1.0, 200*mi, 0.5)
	}
	e.clock.Step(syncPeriod)
	if _, err := e.tryReconcile("api"); err == nil {
		t.Errorf("the sync hid the apiserver error: it would not be retried")
	}
	if p := e.getPod("api-1"); p.Generation != 2 {
		t.Errorf("api-1 generation %d: not resized in the sync where api-0's resize failed", p.Generation)
	}
	c := condition(e.getPolicy("api"), v1alpha1.ConditionResizesBlocked)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "webhook tailor-test.example failed") {
		t.Errorf("ResizesBlocked = %+v, want True naming the failure", c)
	}
	if n := e.events.count("api-0", "ResizeFailed"); n != 1 {
		t.Errorf("%d ResizeFailed events on api-0, want 1:%s", n, e.events)
	}
}

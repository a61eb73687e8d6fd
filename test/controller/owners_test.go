//go:build controller

package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/controller/policy/act"
	"github.com/tailorhq/tailor/internal/controller/policy/gather"
	"github.com/tailorhq/tailor/test/builder"
)

// Issue #23, finding 5: a pod belongs to a policy by its owner chain, one
// policy sizes it, HPAs are found through its owners, and a
// VerticalPodAutoscaler on its workload holds it. No controller-manager
// runs in envtest: the tests create each Deployment's ReplicaSet and pods
// with the owner references kube-controller-manager would set.

// ownedDeployment creates Deployment name whose selector and pod template
// carry podLabels, and one ReplicaSet of it (replicaSetOf), which it
// returns.
func (e *env) ownedDeployment(name string, podLabels map[string]string) *appsv1.ReplicaSet {
	e.t.Helper()
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: podLabels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: builder.DefaultImage,
				Resources: corev1.ResourceRequirements{Requests: builder.List("500m", "256Mi"), Limits: builder.List("1", "512Mi")}}}},
		}},
	}
	if err := e.writer.Create(e.ctx, d); err != nil {
		e.t.Fatalf("create deployment %s: %v", name, err)
	}
	return e.replicaSetOf(name)
}

// replicaSetOf creates a ReplicaSet (name-5d9c) of Deployment name, with
// the Deployment as its controller and its template, as the Deployment
// controller would, and returns it.
func (e *env) replicaSetOf(name string) *appsv1.ReplicaSet {
	e.t.Helper()
	d := &appsv1.Deployment{}
	if err := apiClient.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, d); err != nil {
		e.t.Fatalf("get deployment %s: %v", name, err)
	}
	rsLabels := map[string]string{"pod-template-hash": "5d9c"}
	for k, v := range d.Spec.Template.Labels {
		rsLabels[k] = v
	}
	template := *d.Spec.Template.DeepCopy()
	template.Labels = rsLabels
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name + "-5d9c", Labels: rsLabels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: rsLabels}, Template: template},
	}
	if err := apiClient.Create(e.ctx, rs); err != nil {
		e.t.Fatalf("create replicaset %s: %v", rs.Name, err)
	}
	return rs
}

// podOf is webPod(name) as a pod of rs.
func podOf(rs *appsv1.ReplicaSet, name string) *builder.PodWrapper {
	w := webPod(name).Owner("ReplicaSet", rs.Name, string(rs.UID))
	for k, v := range rs.Labels {
		w.Label(k, v)
	}
	return w
}

// targetRef makes a policy's target Deployment name.
func targetRef(name string) func(*v1alpha1.TailorPolicySpec) {
	return func(s *v1alpha1.TailorPolicySpec) {
		s.Selector = nil
		s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name}
	}
}

// cpuBounds sets container app's CPU bounds ("" leaves one unset).
func cpuBounds(minAllowed, maxAllowed string) func(*v1alpha1.TailorPolicySpec) {
	return func(s *v1alpha1.TailorPolicySpec) {
		cp := v1alpha1.ContainerPolicy{ContainerName: "app"}
		if minAllowed != "" {
			cp.MinAllowed = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(minAllowed)}
		}
		if maxAllowed != "" {
			cp.MaxAllowed = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(maxAllowed)}
		}
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{cp}}
	}
}

func both(fs ...func(*v1alpha1.TailorPolicySpec)) func(*v1alpha1.TailorPolicySpec) {
	return func(s *v1alpha1.TailorPolicySpec) {
		for _, f := range fs {
			f(s)
		}
	}
}

// A targetRef policy capping CPU at 700m and a selector policy holding it
// at least at 1200m both select web-0: before, each resized it to its own
// bounds every minResizeInterval. Now the targetRef policy sizes it alone,
// and the selector policy says so, naming it, with one event.
func TestTwoPoliciesOnOnePod(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	rs := e.ownedDeployment("web", map[string]string{"app": "web"})
	e.pod("web", podOf(rs, "web-0"))
	e.source.SetThrottled(e.ns, "web-0", "app", 0.8, 200*mi, 0.9)
	// The selector policy is the older: the rule, not the order, decides.
	e.policy("web-sel", both(func(s *v1alpha1.TailorPolicySpec) {
		s.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	}, cpuBounds("1200m", "")))
	e.clock.Step(time.Second)
	e.policy("web", both(targetRef("web"), cpuBounds("", "700m")))

	var seen []string
	changes := 0
	for range 12 {
		e.clock.Step(syncPeriod)
		e.reconcile("web-sel")
		e.reconcile("web")
		e.kubelet.Sync(t, e.ns)
		cpu := requestOf(e.getPod("web-0"), "app", corev1.ResourceCPU)
		if len(seen) > 0 && seen[len(seen)-1] != cpu {
			changes++
		}
		seen = append(seen, cpu)
	}
	t.Logf("cpu request over 12 syncs of both policies: %v", seen)
	for _, cpu := range seen {
		if q := resource.MustParse(cpu); q.Cmp(resource.MustParse("700m")) > 0 {
			t.Errorf("web-0's CPU request reached %s, above the winning policy's 700m: the selector policy sized it (%v)", cpu, seen)
			break
		}
	}
	// Raised once (throttled), to the winner's bound: not back and forth.
	if changes > 2 {
		t.Errorf("web-0's CPU request changed %d times in 12 syncs, want at most 2: %v", changes, seen)
	}
	if got := requestOf(e.getPod("web-0"), "app", corev1.ResourceCPU); got != "700m" {
		t.Errorf("web-0's CPU request %s, want 700m (the targetRef policy's maxAllowed)", got)
	}
	r := condition(e.getPolicy("web-sel"), v1alpha1.ConditionReady)
	if r == nil || r.Status != metav1.ConditionFalse || r.Reason != v1alpha1.ReasonConflict || !strings.Contains(r.Message, "TailorPolicy web sizes 1 pod(s)") {
		t.Errorf("selector policy Ready = %+v, want False %s naming TailorPolicy web and 1 pod", r, v1alpha1.ReasonConflict)
	}
	if r := condition(e.getPolicy("web"), v1alpha1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue {
		t.Errorf("targetRef policy Ready = %+v, want True", r)
	}
	if n := e.events.count("web-sel", act.EventConflict); n != 1 {
		t.Errorf("%d Conflict events on web-sel, want 1:%s", n, e.events)
	}
}

// Two targetRef policies naming one Deployment that has no pod yet (scaled
// to zero, or before its first rollout): the younger plans nothing for its
// new pods, so the admission policy, which applies every policy's entry,
// never applies two to one pod; it says which policy sizes the workload.
func TestTwoPoliciesNameOneWorkload(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.ownedDeployment("web", map[string]string{"app": "web"})
	e.policy("web", targetRef("web"))
	e.clock.Step(time.Second)
	e.policy("web-boost", func(s *v1alpha1.TailorPolicySpec) {
		targetRef("web")(s)
		s.StartupBoost = &v1alpha1.StartupBoost{FactorPercent: ptr.To[int32](300)}
	})
	e.syncs("web", 2)
	e.syncs("web-boost", 2)
	if a := e.getPolicy("web").Status.Admission; a == nil || a.TargetKind != "Deployment" || a.TargetName != "web" {
		t.Errorf("the older policy's admission entry %+v, want one for Deployment web", a)
	}
	a := e.getPolicy("web-boost").Status.Admission
	if a == nil || a.TargetKind != "" || len(a.Containers) != 0 || a.Boost != "" || !strings.Contains(a.Message, "TailorPolicy web names the same workload") {
		t.Errorf("the younger policy's admission entry %+v, want none the admission policy could match, naming TailorPolicy web", a)
	}
	r := condition(e.getPolicy("web-boost"), v1alpha1.ConditionReady)
	if r == nil || r.Status != metav1.ConditionFalse || r.Reason != v1alpha1.ReasonConflict || !strings.Contains(r.Message, "TailorPolicy web names the same workload") {
		t.Errorf("the younger policy's Ready = %+v, want False %s naming TailorPolicy web", r, v1alpha1.ReasonConflict)
	}
	if n := e.events.count("web-boost", act.EventConflict); n != 1 {
		t.Errorf("%d Conflict events on web-boost, want 1:%s", n, e.events)
	}
}

// A canary Deployment whose pods carry the stable one's labels: the stable
// Deployment's selector matches them, but they are not its pods, so its
// targetRef policy leaves them alone.
func TestCanaryNotSizedByStablePolicy(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	stable := e.ownedDeployment("web", map[string]string{"app": "web"})
	canary := e.ownedDeployment("web-canary", map[string]string{"app": "web", "track": "canary"})
	e.pod("web", podOf(stable, "web-0"))
	e.pod("web", podOf(canary, "canary-0"))
	for _, p := range []string{"web-0", "canary-0"} {
		e.source.SetThrottled(e.ns, p, "app", 0.8, 200*mi, 0.9)
	}
	e.policy("web", targetRef("web"))
	e.syncs("web", 6)
	if p := e.getPod("web-0"); p.Generation < 2 {
		t.Errorf("the stable pod was not resized (generation %d)", p.Generation)
	}
	if p := e.getPod("canary-0"); p.Generation != 1 {
		t.Errorf("the canary's pod was resized by the stable policy: generation %d, cpu %s", p.Generation, requestOf(p, "app", corev1.ResourceCPU))
	}
	if r := condition(e.getPolicy("web"), v1alpha1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue || !strings.Contains(r.Message, "1 pod(s) selected") {
		t.Errorf("Ready = %+v, want True with 1 pod selected", r)
	}
}

// A selector policy's pods whose Deployment an HPA scales on CPU
// utilization: their CPU requests are held for it, as a targetRef
// policy's are.
func TestSelectorPolicyHeldForHPA(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	rs := e.ownedDeployment("web", map[string]string{"app": "web"})
	e.pod("web", podOf(rs, "web-0"))
	e.source.SetThrottled(e.ns, "web-0", "app", 0.8, 200*mi, 0.9)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 4,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](70)},
			}}},
		},
	}
	if err := apiClient.Create(e.ctx, hpa); err != nil {
		t.Fatalf("create hpa: %v", err)
	}
	e.policy("web", nil)
	e.syncs("web", 6)
	r := condition(e.getPolicy("web"), v1alpha1.ConditionRequestsHeldForHPA)
	if r == nil || r.Status != metav1.ConditionTrue || !strings.Contains(r.Message, "HorizontalPodAutoscaler web") {
		t.Errorf("RequestsHeldForHPA = %+v, want True naming HorizontalPodAutoscaler web", r)
	}
	p := e.getPod("web-0")
	if got := requestOf(p, "app", corev1.ResourceCPU); got != "500m" {
		t.Errorf("CPU request %s, want 500m held for the HPA (limit %s)", got, limitOf(p, "app", corev1.ResourceCPU))
	}
}

// vpa creates a VerticalPodAutoscaler of Deployment target in mode ("" for
// none).
func (e *env) vpa(name, target, mode string) {
	e.t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": e.ns, "name": name},
		"spec": map[string]any{
			"targetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
		},
	}}
	u.SetGroupVersionKind(gather.VPAKind)
	if mode != "" {
		if err := unstructured.SetNestedField(u.Object, mode, "spec", "updatePolicy", "updateMode"); err != nil {
			e.t.Fatal(err)
		}
	}
	if err := apiClient.Create(e.ctx, u); err != nil {
		e.t.Fatalf("create VerticalPodAutoscaler %s: %v", name, err)
	}
}

// A VerticalPodAutoscaler that sets the Deployment's pods' resources (any
// mode but Off) holds the policy of that Deployment: no resize, no
// admission entry, Ready=False naming it. In mode Off it only recommends:
// tailor sizes the pods.
func TestVPAHoldsWorkload(t *testing.T) {
	cases := map[string]struct {
		mode     string
		wantHeld bool
	}{
		"Auto":  {mode: "Auto", wantHeld: true},
		"unset": {wantHeld: true},
		"Off":   {mode: "Off"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, controllerOptions{})
			rs := e.ownedDeployment("web", map[string]string{"app": "web"})
			e.pod("web", podOf(rs, "web-0"))
			e.source.SetThrottled(e.ns, "web-0", "app", 0.8, 200*mi, 0.9)
			e.vpa("web-vpa", "web", tc.mode)
			e.policy("web", targetRef("web"))
			e.syncs("web", 6)
			p, pol := e.getPod("web-0"), e.getPolicy("web")
			r := condition(pol, v1alpha1.ConditionReady)
			if !tc.wantHeld {
				if p.Generation < 2 {
					t.Errorf("a VPA in mode Off held the pod (generation %d)", p.Generation)
				}
				if r == nil || r.Status != metav1.ConditionTrue {
					t.Errorf("Ready = %+v, want True", r)
				}
				return
			}
			if p.Generation != 1 {
				t.Errorf("the pod was resized under a VerticalPodAutoscaler: generation %d, cpu %s", p.Generation, requestOf(p, "app", corev1.ResourceCPU))
			}
			if r == nil || r.Status != metav1.ConditionFalse || r.Reason != v1alpha1.ReasonVerticalPodAutoscaler ||
				!strings.Contains(r.Message, "VerticalPodAutoscaler web-vpa (updateMode ") {
				t.Errorf("Ready = %+v, want False %s naming VerticalPodAutoscaler web-vpa and its mode", r, v1alpha1.ReasonVerticalPodAutoscaler)
			}
			if a := pol.Status.Admission; a == nil || a.TargetKind != "" || len(a.Containers) != 0 || a.Boost != "" {
				t.Errorf("admission = %+v, want no target for the admission policy to match", a)
			}
			if n := e.events.count("web", act.EventVerticalPodAutoscaler); n != 1 {
				t.Errorf("%d VerticalPodAutoscaler events, want 1:%s", n, e.events)
			}
		})
	}
}

// Under a manager: ReplicaSets are read from the metadata-only cache and
// VerticalPodAutoscalers found through the RESTMapper and read from the
// cache, as internal/manager runs the controller.
func TestOwnersThroughTheManagerCache(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	counter := newSyncCounter()
	newManagedController(t, e.controllerDeps(), controllerOptions{Observer: counter})
	stable := e.ownedDeployment("web", map[string]string{"app": "web"})
	canary := e.ownedDeployment("web-canary", map[string]string{"app": "web", "track": "canary"})
	api := e.ownedDeployment("api", map[string]string{"app": "api"})
	e.pod("web", podOf(stable, "web-0"))
	e.pod("web", podOf(canary, "canary-0"))
	e.pod("api", podOf(api, "api-0"))
	for _, p := range []string{"web-0", "canary-0", "api-0"} {
		e.source.SetThrottled(e.ns, p, "app", 0.8, 200*mi, 0.9)
	}
	e.vpa("api", "api", "Recreate")
	e.policy("web", targetRef("web"))
	e.policy("api", targetRef("api"))
	counter.waitSyncs(e, "web", 1, 2*time.Minute)
	counter.waitSyncs(e, "api", 1, 2*time.Minute)
	if p := e.getPod("web-0"); p.Generation < 2 {
		t.Errorf("the stable pod was not resized (generation %d)", p.Generation)
	}
	if p := e.getPod("canary-0"); p.Generation != 1 {
		t.Errorf("the canary's pod was resized by the stable policy (generation %d)", p.Generation)
	}
	if p := e.getPod("api-0"); p.Generation != 1 {
		t.Errorf("api-0 was resized under a VerticalPodAutoscaler (generation %d)", p.Generation)
	}
	// Status is written just after the sync is counted.
	var r *metav1.Condition
	err := wait.PollUntilContextTimeout(e.ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		r = condition(e.getPolicy("api"), v1alpha1.ConditionReady)
		return r != nil && r.Reason == v1alpha1.ReasonVerticalPodAutoscaler, nil
	})
	if err != nil {
		t.Errorf("api Ready = %+v, want reason %s", r, v1alpha1.ReasonVerticalPodAutoscaler)
	}
}

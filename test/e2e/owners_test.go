//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/controller/policy/gather"
	"github.com/tailorhq/tailor/test/cluster"
)

// Issue #23, finding 5, on the local cluster: one owner per pod, and a
// VerticalPodAutoscaler on the same Deployment.

// throttledDeployment is Deployment name of one loadgen pod burning 300m
// against a 200m limit: tailor raises its CPU.
func throttledDeployment(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	deployment(t, ns, name, 1, app().Args("--listen=:8080", "--cpu=300m", "--memory=24Mi").
		Requests("100m", "64Mi").Limits("200m", "256Mi").
		ResizePolicy(corev1.ResourceCPU, corev1.NotRequired).ResizePolicy(corev1.ResourceMemory, corev1.NotRequired))
	pods := livePods(t, ns, name, 1, nil)
	return &pods[0]
}

// cpuBound sets container app's CPU minAllowed or maxAllowed and a short
// minResizeInterval, so that two policies fighting would show in seconds.
func cpuBound(minAllowed, maxAllowed string) func(*v1alpha1.TailorPolicySpec) {
	return func(s *v1alpha1.TailorPolicySpec) {
		cp := v1alpha1.ContainerPolicy{ContainerName: "app", ControlledResources: []corev1.ResourceName{corev1.ResourceCPU}}
		if minAllowed != "" {
			cp.MinAllowed = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(minAllowed)}
		}
		if maxAllowed != "" {
			cp.MaxAllowed = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(maxAllowed)}
		}
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{cp}}
		s.Behavior.MinResizeInterval = &metav1.Duration{Duration: 5 * time.Second}
	}
}

// Two policies on one pod: a targetRef policy of its Deployment capping CPU
// at 250m, and an older selector policy holding it at 400m at least. Before,
// each resized the pod to its own bounds every minResizeInterval (18 changes
// in 90s on this cluster). Now the targetRef policy sizes it alone and the
// selector policy says Ready=False Conflict, naming it.
func TestTwoPoliciesOnOnePod(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 500) // at most 250m, 400m had the loser won, and the limit above
	ns := newNamespace(t)
	c := startManager(t, ns)
	pod := throttledDeployment(t, ns, "web")
	applyPolicy(t, c, ns, "web-sel", func(s *v1alpha1.TailorPolicySpec) {
		s.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
		cpuBound("400m", "")(s)
	})
	time.Sleep(time.Second) // a later creationTimestamp
	applyPolicy(t, c, ns, "web", func(s *v1alpha1.TailorPolicySpec) {
		s.Selector = nil
		s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
		cpuBound("", "250m")(s)
	})
	waitPolicy(t, c, ns, "web-sel", time.Minute, "Ready=False Conflict naming TailorPolicy web", func(p *v1alpha1.TailorPolicy) bool {
		r := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady)
		return r != nil && r.Status == metav1.ConditionFalse && r.Reason == v1alpha1.ReasonConflict && strings.Contains(r.Message, "TailorPolicy web sizes 1 pod(s)")
	})
	// 40s is eight minResizeIntervals: two policies fighting would change
	// the request at each; one raises it in a few steps to 250m and stops.
	var seen []int64
	deadline := time.Now().Add(40 * time.Second)
	for time.Now().Before(deadline) {
		m := cpuRequestMillis(reread(t, pod))
		if len(seen) == 0 || seen[len(seen)-1] != m {
			seen = append(seen, m)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("cpu requests over 40s: %v (m)", seen)
	for _, m := range seen {
		if m > 250 {
			t.Errorf("cpu request reached %dm, above the targetRef policy's maxAllowed 250m: the selector policy sized the pod too (%v)", m, seen)
			break
		}
	}
	if len(seen) > 4 {
		t.Errorf("cpu request changed %d times in 40s: the pod is resized back and forth (%v)", len(seen)-1, seen)
	}
	if p := waitPolicy(t, c, ns, "web", 10*time.Second, "Ready", func(p *v1alpha1.TailorPolicy) bool {
		return meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionReady)
	}); p == nil {
		t.Error("the targetRef policy is not Ready")
	}
}

// A VerticalPodAutoscaler in mode Auto on the Deployment (its CRD only:
// no VPA component runs): tailor holds the Deployment, says so naming it,
// and resizes nothing. Set to Off, the VPA only recommends: tailor sizes
// the pod.
func TestVPAOnTheSameDeployment(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 400) // 200m limit, raised once the VPA is Off
	// The VerticalPodAutoscaler CRD is installed for the suite before any
	// test (installClusterObjects): the manager looks for it as it starts.
	ns := newNamespace(t)
	c := startManager(t, ns)
	pod := throttledDeployment(t, ns, "web")
	vpa := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": ns, "name": "web"},
		"spec": map[string]any{
			"targetRef":    map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
			"updatePolicy": map[string]any{"updateMode": "Auto"},
		},
	}}
	vpa.SetGroupVersionKind(gather.VPAKind)
	if err := c.Create(context.Background(), vpa); err != nil {
		t.Fatalf("create VerticalPodAutoscaler: %v", err)
	}
	applyPolicy(t, c, ns, "web", func(s *v1alpha1.TailorPolicySpec) {
		s.Selector = nil
		s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	})
	held := waitPolicy(t, c, ns, "web", time.Minute, "Ready=False VerticalPodAutoscaler naming it", func(p *v1alpha1.TailorPolicy) bool {
		r := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady)
		return r != nil && r.Reason == v1alpha1.ReasonVerticalPodAutoscaler && strings.Contains(r.Message, "VerticalPodAutoscaler web (updateMode Auto)")
	})
	if a := held.Status.Admission; a != nil && (a.TargetKind != "" || len(a.Containers) > 0) {
		t.Errorf("an admission entry under a VerticalPodAutoscaler: %s", mustJSON(a))
	}
	// Ten syncs (2s each) of a throttled pod: none resizes it.
	time.Sleep(20 * time.Second)
	if p := reread(t, pod); p.Generation != 1 {
		t.Errorf("the pod was resized under a VerticalPodAutoscaler in mode Auto (generation %d, cpu %dm)", p.Generation, cpuRequestMillis(p))
	}

	if err := c.Get(context.Background(), client.ObjectKeyFromObject(vpa), vpa); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(vpa.Object, "Off", "spec", "updatePolicy", "updateMode"); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(context.Background(), vpa); err != nil {
		t.Fatalf("setting the VerticalPodAutoscaler to Off: %v", err)
	}
	waitPod(t, pod, 90*time.Second, "cpu raised once the VPA is Off", func(p *corev1.Pod) bool { return p.Generation > 1 })
	waitPolicy(t, c, ns, "web", 30*time.Second, "Ready", func(p *v1alpha1.TailorPolicy) bool {
		return meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionReady)
	})
}

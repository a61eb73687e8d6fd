//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/cluster"
)

// A namespace whose LimitRange caps container CPU at 300m: tailor raises a
// busy Deployment in place, and its rollout, whose new pods start with a 3x
// startup boost, completes. Before tailor knew the namespace's rules, the
// apiserver refused every new pod (FailedCreate: maximum cpu usage per
// Container is 300m) and the rollout stalled (issue #23, finding 1). Each
// pod, running or new, stays within the LimitRange.
func TestLimitRangeMaxWithBoostAndRollout(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 600) // two pods of at most 300m each during the rollout
	ns := newNamespace(t)
	c := startManager(t, ns)
	installAdmissionPolicy(t, cluster.AdmissionPolicyFile, ns)
	ctx := context.Background()
	lr := &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team-caps"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m")},
		}}},
	}
	if _, err := clientset.CoreV1().LimitRanges(ns).Create(ctx, lr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deployment(t, ns, "web", 1, app().Args("--listen=:8080", "--cpu=400m", "--memory=24Mi").Requests("100m", "64Mi").Limits("200m", "128Mi"))
	applyPolicy(t, c, ns, "web", func(s *v1alpha1.TailorPolicySpec) {
		s.Selector = nil
		s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
		s.StartupBoost = &v1alpha1.StartupBoost{FactorPercent: ptr(int32(300))}
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
		}}}
	})
	first := livePods(t, ns, "web", 1, nil)
	// Raised in place as far as the LimitRange allows, and the status says
	// what caps new pods.
	p := waitPolicy(t, c, ns, "web", 3*time.Minute, "the pod raised in place, status.admission capped by the LimitRange", func(p *v1alpha1.TailorPolicy) bool {
		raised := false
		for _, ps := range p.Status.Pods {
			raised = raised || ps.Result == v1alpha1.ResizeResultDone
		}
		a := p.Status.Admission
		return raised && a != nil && strings.Contains(a.Summary, "LimitRange team-caps")
	})
	t.Logf("status.admission: %s", mustJSON(p.Status.Admission))
	within := func(pod *corev1.Pod, what string) {
		t.Helper()
		for _, ctr := range pod.Spec.Containers {
			if lim := ctr.Resources.Limits.Cpu(); lim.MilliValue() > 300 {
				t.Errorf("%s pod %s: cpu limit %s above the LimitRange max 300m", what, pod.Name, lim)
			}
		}
	}
	running, err := clientset.CoreV1().Pods(ns).Get(ctx, first[0].Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	within(running, "running")
	if running.Generation < 2 {
		t.Errorf("pod %s was not resized in place (generation %d)", running.Name, running.Generation)
	}

	admitted := watchAdmitted(t, ns, "web")
	rollOut(t, ns, "web")
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := clientset.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := d.Status
		return s.ObservedGeneration == d.Generation && s.UpdatedReplicas == 1 && s.AvailableReplicas == 1 && s.Replicas == 1, nil
	})
	events, _ := clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedCreate"})
	for _, ev := range events.Items {
		t.Errorf("FailedCreate: %s", ev.Message)
	}
	if err != nil {
		t.Fatalf("the rollout did not complete: %v", err)
	}
	for _, pod := range livePods(t, ns, "web", 1, map[string]bool{first[0].Name: true}) {
		created := admitted(pod.Name)
		within(created, "new")
		if created.Annotations[v1alpha1.BoostAnnotation] == "" {
			t.Errorf("new pod %s was not boosted at admission: annotations %v", pod.Name, created.Annotations)
		}
	}
}

// A Recreate rollout on a full node: new pods are created with a 10x
// startup boost that the node's free room cannot hold, so the first wait
// Pending. tailor notices the pod it sized is unschedulable, plans new pods
// against the nodes' free room, replaces the pod with an Unschedulable event,
// and the rollout completes on the real scheduler (issue #23, finding 2).
func TestRecreateRolloutOnAFullNode(t *testing.T) {
	cluster.Quiet(t)
	ns := newNamespace(t)
	c := startManager(t, ns)
	installAdmissionPolicy(t, cluster.AdmissionPolicyFile, ns)
	ctx := context.Background()
	deployment(t, ns, "web", 1, app().Args("--listen=:8080", "--cpu=20m", "--memory=24Mi").Requests("100m", "64Mi").Limits("200m", "128Mi"),
		func(*corev1.PodSpec) {})
	if _, err := clientset.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType,
		[]byte(`{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	first := livePods(t, ns, "web", 1, nil)
	// 300m free beside it: 400m once the rollout deletes it, far from the
	// 1000m a boosted new pod asks.
	fillCPU(t, ns, 300)
	applyPolicy(t, c, ns, "web", func(s *v1alpha1.TailorPolicySpec) {
		s.Selector = nil
		s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
		// Taken back a second after Ready: the running pod, long Ready,
		// is not boosted in place.
		s.StartupBoost = &v1alpha1.StartupBoost{FactorPercent: ptr(int32(1000)), Duration: &metav1.Duration{Duration: time.Second}}
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
		}}}
	})
	p := waitPolicy(t, c, ns, "web", 2*time.Minute, "status.admission with the boost", func(p *v1alpha1.TailorPolicy) bool {
		a := p.Status.Admission
		return a != nil && a.Boost != "" && a.ObservedGeneration == p.Generation
	})
	t.Logf("status.admission before the rollout: %s", mustJSON(p.Status.Admission))

	admitted := watchAdmitted(t, ns, "web")
	rollOut(t, ns, "web")
	err := wait.PollUntilContextTimeout(ctx, time.Second, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := clientset.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := d.Status
		return s.ObservedGeneration == d.Generation && s.UpdatedReplicas == 1 && s.AvailableReplicas == 1 && s.Replicas == 1, nil
	})
	events, evErr := clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if evErr != nil {
		t.Fatal(evErr)
	}
	var replaced []string
	for _, ev := range events.Items {
		if ev.Reason == "Unschedulable" && ev.InvolvedObject.Kind == "Pod" {
			replaced = append(replaced, ev.InvolvedObject.Name+": "+ev.Message)
		}
	}
	if err != nil {
		t.Fatalf("the rollout did not complete: %v; tailor's Unschedulable events: %q; %s", err, replaced, explainNodeRoom())
	}
	if len(replaced) == 0 {
		t.Errorf("no Unschedulable event: the boosted pod was not found stuck (did it fit? %s)", explainNodeRoom())
	}
	t.Logf("replaced: %q", replaced)
	for _, pod := range livePods(t, ns, "web", 1, map[string]bool{first[0].Name: true}) {
		created := admitted(pod.Name)
		if cpu := created.Spec.Containers[0].Resources.Requests.Cpu().MilliValue(); cpu > 400 || cpu <= 100 {
			t.Errorf("the running new pod %s was created with %dm cpu: want its boost cut to the node's free room (at most 400m)", pod.Name, cpu)
		}
	}
}

//go:build e2e

package chaos

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/cluster"
)

// memoryFloor is a policy that controls memory only, one resize at a time,
// with minAllowed memory mi MiB.
func memoryFloor(mi int64) func(*v1alpha1.TailorPolicySpec) {
	return func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceMemory},
			MinAllowed: corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(mi<<20, resource.BinarySI)},
		}}}
		s.Behavior = &v1alpha1.Behavior{MinResizeInterval: &metav1.Duration{Duration: 3 * time.Second}, MaxConcurrentResizes: ptr.To[int32](1)}
	}
}

// settled waits until the policy has sized every pod for an idle load
// generator and the kubelet has applied it, so that the minimums the tests
// then set (300Mi and up) call for one more resize each: memory is sized
// as Kubernetes charges it, so the 64Mi request stays (the typical peak,
// the working set, is under it and minAllowed is 64Mi) and the 128Mi limit
// goes to the tail (the working set plus the 256Mi least margin, under
// 320Mi).
func settled(t *testing.T, ns string, pods []*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		waitPod(t, ns, p.Name, time.Minute, "its limit raised for an idle load generator", func(p *corev1.Pod) bool {
			r := p.Spec.Containers[0].Resources
			lim := r.Limits.Memory().Value()
			return r.Requests.Memory().Value() == 64<<20 && lim > 128<<20 && lim < 320<<20 && p.Status.ObservedGeneration == p.Generation
		})
	}
	// Past minResizeInterval (3s).
	time.Sleep(4 * time.Second)
}

// reconcileErrors is how many of the manager's syncs failed so far.
func reconcileErrors(m *managerProcess) float64 {
	v, _ := m.metric("controller_runtime_reconcile_total", map[string]string{"controller": "tailorpolicy", "result": "error"})
	return v
}

// The objects tailor works on change under it while resizes are in flight:
// a pod is deleted just after its resize is sent, the policy is edited
// before the batch is done, then deleted just after it sent a resize. The
// manager goes on without a panic or a stuck sync: the latest edit wins
// for the pods left, nothing is resized after the deletion, and the
// apiserver's garbage collector removes the checkpoint with the policy.
func TestObjectsChangeMidResize(t *testing.T) {
	cluster.Quiet(t)
	ns := newNamespace(t)
	pods := replicas(t, ns, "web", 4, func(c *builder.ContainerWrapper) *builder.ContainerWrapper {
		return c.Requests("50m", "64Mi").Limits("100m", "128Mi")
	})
	rec := record(t, ns)
	m := startManager(t, "m", "--leader-elect=false")
	createPolicy(t, ns, "web", memoryFloor(64))
	settled(t, ns, pods)

	// A pod deleted just after its resize was sent, and the policy edited
	// before the batch is done.
	edited := time.Now()
	editPolicy(t, ns, "web", memoryFloor(300))
	first, ok := rec.waitFirst(edited, 30*time.Second)
	if !ok {
		t.Fatalf("no resize within 30s of raising the memory minimum; policy status: %s", policyText(t, ns, "web"))
	}
	zero := int64(0)
	if err := clientset.CoreV1().Pods(ns).Delete(context.Background(), first.pod, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatalf("delete pod %s: %v", first.pod, err)
	}
	editPolicy(t, ns, "web", memoryFloor(320))
	for _, p := range pods {
		if p.Name == first.pod {
			continue
		}
		waitPod(t, ns, p.Name, time.Minute, "at the latest minimum, 320Mi", func(p *corev1.Pod) bool {
			return p.Spec.Containers[0].Resources.Requests.Memory().Value() == 320<<20
		})
	}
	// The syncs that failed on the deleted pod, if any, are over.
	failed := reconcileErrors(m)
	time.Sleep(6 * time.Second)
	if now := reconcileErrors(m); now != failed {
		t.Errorf("syncs still failing after the pod's deletion: %v -> %v", failed, now)
	}

	// The policy deleted just after it sent a resize.
	cp := &v1alpha1.TailorCheckpoint{}
	if err := apiClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, cp); err != nil {
		t.Fatalf("no checkpoint before the deletion: %v", err)
	}
	edited = time.Now()
	editPolicy(t, ns, "web", memoryFloor(340))
	if _, ok := rec.waitFirst(edited, 30*time.Second); !ok {
		t.Fatalf("no resize within 30s of raising the memory minimum to 340Mi")
	}
	if err := apiClient.Delete(context.Background(), getPolicy(t, ns, "web")); err != nil {
		t.Fatalf("delete policy: %v", err)
	}
	deleted := time.Now()
	time.Sleep(10 * time.Second)
	// A resize already on the wire at the deletion may land just after it.
	if late := rec.since(deleted.Add(time.Second)); len(late) > 0 {
		t.Errorf("%d resize(s) after the policy was deleted:%s", len(late), rec)
	}
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := apiClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &v1alpha1.TailorCheckpoint{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("the checkpoint outlived its policy by a minute: %v", err)
	}
	if v, ok := m.metric("tailor_recommendation", map[string]string{"namespace": ns, "policy": "web"}); !ok || v != 0 {
		t.Errorf("tailor_recommendation of the deleted policy still served (sum %v, read %v)", v, ok)
	}
	if !m.alive() {
		t.Fatalf("the manager exited: %v", m.err)
	}
	if n := restarts(t, ns); n != 0 {
		t.Errorf("%d container restart(s), want none", n)
	}
}

// A Deployment scaled to zero and back: the policy has no pods for a while
// (no error, Ready says so), and the new pods start from what the
// workload's earlier pods taught: raised for the peak those saw.
func TestWorkloadScaledToZeroAndBack(t *testing.T) {
	cluster.Quiet(t)
	ns := newNamespace(t)
	m := startManager(t, "m", "--leader-elect=false")
	c := cluster.Loadgen().Args("--listen=:8080", "--memory=200Mi").Requests("50m", "128Mi").Limits("100m", "512Mi").Obj()
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "api"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{*c}, TerminationGracePeriodSeconds: ptr.To[int64](0),
					AutomountServiceAccountToken: ptr.To(false)},
			},
		},
	}
	if _, err := clientset.AppsV1().Deployments(ns).Create(context.Background(), dep, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	createPolicy(t, ns, "api", func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceMemory},
		}}}
	})
	raised := func(what string) {
		t.Helper()
		// Three minutes: a pod whose first reading caught it still filling
		// its memory is raised short of it first, and to its working set
		// + 10% a minResizeInterval (1m) later.
		err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			list, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=api"})
			if err != nil || len(list.Items) != 2 {
				return false, nil //nolint:nilerr
			}
			for _, p := range list.Items {
				// The request is the peak seen (a new pod's from its
				// workload's history), above the template's 128Mi.
				if p.DeletionTimestamp != nil || p.Spec.Containers[0].Resources.Requests.Memory().Cmp(resource.MustParse("200Mi")) < 0 {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("%s: both pods not raised for their 200Mi within 3m: %v; policy status: %s", what, err, policyText(t, ns, "api"))
		}
	}
	raised("at first")
	scale := func(n int32) {
		t.Helper()
		s, err := clientset.AppsV1().Deployments(ns).GetScale(context.Background(), "api", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Spec.Replicas = n
		if _, err := clientset.AppsV1().Deployments(ns).UpdateScale(context.Background(), "api", s, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("scale to %d: %v", n, err)
		}
	}
	scale(0)
	waitCondition(t, ns, "api", v1alpha1.ConditionReady, time.Minute, "True with no pods", func(c *metav1Condition) bool {
		return c.Status == metav1.ConditionTrue && c.Message != "" && c.Message[:1] == "0"
	})
	failed := reconcileErrors(m)
	time.Sleep(6 * time.Second)
	if now := reconcileErrors(m); now != failed {
		t.Errorf("syncs failing with no pods: %v -> %v", failed, now)
	}
	back := time.Now()
	scale(2)
	raised("after scaling back")
	t.Logf("both new pods raised %s after scaling back", time.Since(back).Round(time.Second))
	if !m.alive() {
		t.Fatalf("the manager exited: %v", m.err)
	}
}

// The TailorPolicy CRD upgraded (applied anew with a change, as a release's
// CRDs are) under a running manager: the apiserver restarts the resource's
// watches, and the manager keeps acting on policy edits.
func TestCRDUpgradeUnderARunningManager(t *testing.T) {
	cluster.Quiet(t)
	ns := newNamespace(t)
	pods := replicas(t, ns, "web", 1, func(c *builder.ContainerWrapper) *builder.ContainerWrapper {
		return c.Requests("50m", "64Mi").Limits("100m", "128Mi")
	})
	m := startManager(t, "m", "--leader-elect=false")
	createPolicy(t, ns, "web", memoryFloor(64))
	settled(t, ns, pods)

	dyn := dynamic.NewForConfigOrDie(restConfig)
	data, err := os.ReadFile(filepath.Join(root, "config", "crd", "bases", "autoscaling.tailor.dev_tailorpolicies.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd unstructured.Unstructured
	if err := yaml.Unmarshal(data, &crd.Object); err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	v0 := versions[0].(map[string]any)
	cols, _, _ := unstructured.NestedSlice(v0, "additionalPrinterColumns")
	v0["additionalPrinterColumns"] = append(cols, map[string]any{"name": "Upgraded", "type": "string", "jsonPath": ".metadata.uid", "priority": int64(1)})
	if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(cluster.CRDGVR).Apply(context.Background(), crd.GetName(), &crd, metav1.ApplyOptions{FieldManager: "tailor-tests", Force: true}); err != nil {
		t.Fatalf("upgrading the CRD: %v", err)
	}
	t.Cleanup(func() {
		if err := cluster.InstallCRDs(context.Background(), dyn); err != nil {
			t.Errorf("restoring the CRDs: %v", err)
		}
	})
	time.Sleep(3 * time.Second)
	editPolicy(t, ns, "web", memoryFloor(300))
	waitPod(t, ns, pods[0].Name, time.Minute, "raised to the edited minimum after the CRD upgrade", func(p *corev1.Pod) bool {
		return p.Spec.Containers[0].Resources.Requests.Memory().Value() == 300<<20
	})
	if !m.alive() {
		t.Fatalf("the manager exited: %v", m.err)
	}
}

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tailorhq/tailor/test/cluster"
)

// The first fidelity tests: what the real apiserver and kubelet do with a
// resize, independent of tailor. Everything tailor predicts rests on these.

func TestCPUResizeInPlace(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 400) // 200m, resized up
	ns := newNamespace(t)
	pod := createRunningPod(t, loadgenPod(ns, "cpu", app().
		Requests("200m", "64Mi").Limits("500m", "128Mi").
		ResizePolicy(corev1.ResourceCPU, corev1.NotRequired).ResizePolicy(corev1.ResourceMemory, corev1.NotRequired)))
	before := containerStatus(pod, "app")
	if got := readCgroup(t, pod, "app", "cpu", "cpu.cfs_quota_us"); got != 50000 {
		t.Fatalf("cpu.cfs_quota_us before resize = %d, want 50000", got)
	}
	if got := readCgroup(t, pod, "app", "cpu", "cpu.shares"); got != 204 {
		t.Fatalf("cpu.shares before resize = %d, want 204", got)
	}

	start := time.Now()
	if _, err := resizePatch(context.Background(), clientset, pod, containerPatch("app",
		map[string]string{"cpu": "300m"}, map[string]string{"cpu": "1"})); err != nil {
		t.Fatalf("resize: %v", err)
	}
	after, took := waitResized(t, pod, start)
	recordConvergence(t, "cpu 200m/500m -> 300m/1", took)

	waitCgroup(t, after, "app", "cpu", "cpu.cfs_quota_us", 100000)
	waitCgroup(t, after, "app", "cpu", "cpu.shares", 307)
	st := containerStatus(after, "app")
	if st.ContainerID != before.ContainerID || st.RestartCount != 0 {
		t.Errorf("container restarted: id %s -> %s, restarts %d", before.ContainerID, st.ContainerID, st.RestartCount)
	}
	if after.Status.ObservedGeneration != after.Generation || after.Generation <= pod.Generation {
		t.Errorf("generation %d -> %d, observedGeneration %d", pod.Generation, after.Generation, after.Status.ObservedGeneration)
	}
	if got := st.Resources.Limits[corev1.ResourceCPU]; got.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("status cpu limit = %s, want 1", got.String())
	}
}

func TestMemoryLimitIncreaseRestartsContainer(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 100) // 100m
	ns := newNamespace(t)
	pod := createRunningPod(t, loadgenPod(ns, "mem", app().
		Requests("100m", "64Mi").Limits("200m", "1Gi").
		ResizePolicy(corev1.ResourceCPU, corev1.NotRequired).ResizePolicy(corev1.ResourceMemory, corev1.RestartContainer)))
	if got := readCgroup(t, pod, "app", "memory", "memory.limit_in_bytes"); got != 1<<30 {
		t.Fatalf("memory.limit_in_bytes before = %d, want %d", got, 1<<30)
	}

	start := time.Now()
	if _, err := resizePatch(context.Background(), clientset, pod, containerPatch("app", nil, map[string]string{"memory": "2Gi"})); err != nil {
		t.Fatalf("resize: %v", err)
	}
	after, took := waitResized(t, pod, start)
	recordConvergence(t, "memory limit 1Gi -> 2Gi (RestartContainer)", took)
	after = waitRunning(t, after)

	waitCgroup(t, after, "app", "memory", "memory.limit_in_bytes", 2<<30)
	if st := containerStatus(after, "app"); st.RestartCount != 1 {
		t.Errorf("restartCount = %d, want 1 (resizePolicy RestartContainer)", st.RestartCount)
	}
}

func TestGuaranteedMemoryDownAndUpInPlace(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 200) // 200m
	ns := newNamespace(t)
	pod := createRunningPod(t, loadgenPod(ns, "guaranteed", app().
		Requests("200m", "256Mi").Limits("200m", "256Mi").
		ResizePolicy(corev1.ResourceCPU, corev1.NotRequired).ResizePolicy(corev1.ResourceMemory, corev1.NotRequired)))
	if pod.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Fatalf("qosClass = %s, want Guaranteed", pod.Status.QOSClass)
	}
	id := containerStatus(pod, "app").ContainerID

	for _, step := range []struct{ mem string }{{"200Mi"}, {"320Mi"}} {
		start := time.Now()
		q := map[string]string{"memory": step.mem}
		if _, err := resizePatch(context.Background(), clientset, pod, containerPatch("app", q, q)); err != nil {
			t.Fatalf("resize memory to %s: %v", step.mem, err)
		}
		after, took := waitResized(t, pod, start)
		recordConvergence(t, "guaranteed memory -> "+step.mem, took)
		want := resource.MustParse(step.mem)
		waitCgroup(t, after, "app", "memory", "memory.limit_in_bytes", want.Value())
		st := containerStatus(after, "app")
		if st.ContainerID != id || st.RestartCount != 0 {
			t.Errorf("memory -> %s restarted the container: id %s -> %s, restarts %d", step.mem, id, st.ContainerID, st.RestartCount)
		}
		if after.Status.QOSClass != corev1.PodQOSGuaranteed {
			t.Errorf("qosClass after memory -> %s = %s, want Guaranteed", step.mem, after.Status.QOSClass)
		}
	}
}

func TestDeferredResizeCompletesWhenRoomAppears(t *testing.T) {
	cluster.Quiet(t)
	ns := newNamespace(t)
	ctx := context.Background()
	target := createRunningPod(t, loadgenPod(ns, "target", app().
		Requests("100m", "32Mi").Limits("100m", "64Mi").
		ResizePolicy(corev1.ResourceCPU, corev1.NotRequired).ResizePolicy(corev1.ResourceMemory, corev1.NotRequired)))

	// Fill the node so that exactly 200m stay free, then ask for 400m more.
	filler := fillCPU(t, ns, 200)

	start := time.Now()
	if _, err := resizePatch(ctx, clientset, target, containerPatch("app",
		map[string]string{"cpu": "500m"}, map[string]string{"cpu": "500m"})); err != nil {
		t.Fatalf("resize: %v", err)
	}
	cond := waitCondition(t, target, corev1.PodResizePending, corev1.PodReasonDeferred, 30*time.Second, explainNodeRoom)
	t.Logf("deferred as expected: %s", cond.Message)
	if cond.ObservedGeneration == 0 {
		t.Errorf("PodResizePending has no observedGeneration")
	}

	zero := int64(0)
	if err := clientset.CoreV1().Pods(ns).Delete(ctx, filler.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatalf("delete filler: %v", err)
	}
	freed := time.Now()
	after, took := waitResized(t, target, start)
	recordConvergence(t, "deferred cpu 100m -> 500m, after room appeared", time.Since(freed))
	t.Logf("whole deferred resize took %.2fs", took.Seconds())
	waitCgroup(t, after, "app", "cpu", "cpu.cfs_quota_us", 50000)
}

func TestResizeBeyondAllocatableRefusedAtAdmission(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 100) // 100m; the refused resize asks no room
	ns := newNamespace(t)
	pod := createRunningPod(t, loadgenPod(ns, "huge", app().
		Requests("100m", "32Mi").Limits("200m", "64Mi").
		ResizePolicy(corev1.ResourceCPU, corev1.NotRequired).ResizePolicy(corev1.ResourceMemory, corev1.NotRequired)))
	node, err := clientset.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alloc := node.Status.Allocatable.Cpu().MilliValue()
	ask := fmt.Sprintf("%dm", alloc+1000)

	_, err = resizePatch(context.Background(), clientset, pod, containerPatch("app",
		map[string]string{"cpu": ask}, map[string]string{"cpu": ask}))
	if !apierrors.IsForbidden(err) {
		t.Fatalf("resize to %s on a node with %dm allocatable: got %v, want 403 Forbidden", ask, alloc, err)
	}
	wantMsg := fmt.Sprintf("node didn't have enough allocatable resources: cpu, requested: %d, allocatable: %d", alloc+1000, alloc)
	if !strings.Contains(err.Error(), wantMsg) {
		t.Errorf("refusal message %q does not contain %q", err.Error(), wantMsg)
	}
	var status apierrors.APIStatus
	if ok := asAPIStatus(err, &status); !ok || !hasCause(status.Status(), "NodeCapacity") {
		t.Errorf("refusal has no NodeCapacity cause: %v", err)
	}
	// Nothing was applied.
	fresh, err := clientset.CoreV1().Pods(ns).Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Generation != pod.Generation {
		t.Errorf("refused resize changed the pod: generation %d -> %d", pod.Generation, fresh.Generation)
	}
}

func TestResizeNeedsPodsResizePermission(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 200) // 100m, then 150m
	ns := newNamespace(t)
	ctx := context.Background()
	pod := createRunningPod(t, loadgenPod(ns, "rbac", app().
		Requests("100m", "32Mi").Limits("200m", "64Mi").
		ResizePolicy(corev1.ResourceCPU, corev1.NotRequired).ResizePolicy(corev1.ResourceMemory, corev1.NotRequired)))

	allowed := serviceAccountClient(t, ns, "resizer", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods/resize"}, Verbs: []string{"get", "patch"}},
	})
	denied := serviceAccountClient(t, ns, "no-resize", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "patch"}},
	})

	_, err := resizePatch(ctx, denied, pod, containerPatch("app", map[string]string{"cpu": "150m"}, nil))
	if !apierrors.IsForbidden(err) {
		t.Fatalf("resize without pods/resize: got %v, want 403 Forbidden", err)
	}
	if want := `cannot patch resource "pods/resize"`; !strings.Contains(err.Error(), want) {
		t.Errorf("refusal %q does not name %s", err.Error(), want)
	}

	start := time.Now()
	if _, err := resizePatch(ctx, allowed, pod, containerPatch("app", map[string]string{"cpu": "150m"}, nil)); err != nil {
		t.Fatalf("resize with get+patch on pods/resize: %v", err)
	}
	_, took := waitResized(t, pod, start)
	recordConvergence(t, "cpu request 100m -> 150m as a ServiceAccount", took)
}

// serviceAccountClient creates a ServiceAccount bound to a Role with rules,
// and returns a client that impersonates it.
func serviceAccountClient(t *testing.T, ns, name string, rules []rbacv1.PolicyRule) kubernetes.Interface {
	t.Helper()
	ctx := context.Background()
	if _, err := clientset.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clientset.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
	}
	if _, err := clientset.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + name}
	return kubernetes.NewForConfigOrDie(cfg)
}

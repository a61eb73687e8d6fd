//go:build e2e

package deploy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/cluster"
)

// TestGuardOnTheCluster installs the kustomize default's RBAC and its
// guard (ValidatingAdmissionPolicy tailor-guard) for real, moved and
// prefixed as a user's overlay does, and asks as the manager's
// ServiceAccount, with dry runs, which go through admission and remove
// nothing: deleting a Running pod is refused with the guard's message,
// deleting a pod tailor sized that the scheduler found no room for is
// allowed; the cluster's admin deletes the Running pod as before. Exec
// and the kubelet's proxy are refused by RBAC, whatever the pod.
func TestGuardOnTheCluster(t *testing.T) {
	cluster.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id := rand.String(5)
	namespace := "deploy-" + id
	prefix := clusterPrefix + id + "-"
	objs := renderKustomize(t, namespace, prefix)
	created := map[string]bool{"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true}
	for k := range applied {
		created[k] = true
	}
	in := install(ctx, t, namespace, nil, objs, created)
	work := cluster.Namespace(t, clientset, "deploy-work-"+id)

	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: fmt.Sprintf("system:serviceaccount:%s:%s", namespace, in.serviceAccount),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}}
	manager, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pod := func(name string) *builder.PodWrapper {
		return builder.Pod(name).Namespace(work).TerminationGracePeriod(0).Annotation(v1alpha1.AdmittedAnnotation, "web: app cpu 10m->20m").
			Container(builder.Container("app").Image("tailor.local/loadgen:dev").Requests("10m", "16Mi").Limits("20m", "32Mi"))
	}
	running := pod("running").Obj()
	running.Spec.AutomountServiceAccountToken = new(bool)
	// No node has this label: the scheduler finds it no room, and says so.
	stuck := pod("stuck").NodeSelector("deploy.tailor.dev/none", id).Obj()
	for _, p := range []*corev1.Pod{running, stuck} {
		if _, err := clientset.CoreV1().Pods(work).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		r, err := clientset.CoreV1().Pods(work).Get(ctx, "running", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s, err := clientset.CoreV1().Pods(work).Get(ctx, "stuck", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		unschedulable := false
		for _, c := range s.Status.Conditions {
			unschedulable = unschedulable || c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable
		}
		return r.Status.Phase == corev1.PodRunning && unschedulable, nil
	})
	if err != nil {
		t.Fatalf("pod running not Running, or pod stuck not found Unschedulable: %v", err)
	}
	dryRun := metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
	// RBAC and the guard reach the apiserver through its informers.
	// The last answer is judged, whether the guard came up in time or not.
	_ = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err = manager.CoreV1().Pods(work).Delete(ctx, "running", dryRun)
		return strings.Contains(fmt.Sprint(err), "ValidatingAdmissionPolicy"), nil
	})
	want := fmt.Sprintf("ValidatingAdmissionPolicy '%[1]stailor-guard' with binding '%[1]stailor-guard' denied request: "+
		"tailor deletes only a pod no node has room for (Pending, on no node, Unschedulable): pod running is Running on node", prefix)
	if !apierrors.IsForbidden(err) || !strings.Contains(fmt.Sprint(err), want) {
		t.Errorf("the manager deleting a Running pod: %v; want it refused: %s", err, want)
	}
	if err := manager.CoreV1().Pods(work).Delete(ctx, "stuck", dryRun); err != nil {
		t.Errorf("the manager deleting a pod it sized that no node has room for: %v", err)
	}
	if err := clientset.CoreV1().Pods(work).Delete(ctx, "running", dryRun); err != nil {
		t.Errorf("the admin deleting a Running pod: %v", err)
	}
	in.checkAccess(ctx, t, in.serviceAccount, nil, slices.Concat(
		accesses([]string{"create", "get"}, "", "pods", "exec", work),
		accesses([]string{"get", "create"}, "", "nodes", "proxy", ""),
	))
}

package cluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// WaitDefaultServiceAccount waits until ns has its default ServiceAccount:
// the apiserver refuses pods in a namespace before the controller-manager
// has created it.
func WaitDefaultServiceAccount(ctx context.Context, cs kubernetes.Interface, ns string) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// TestLabel marks every namespace a test creates, so that hack/e2e.sh can
// remove what a killed run left behind on a cluster it reuses: its pods
// would hold the node's CPU that the next run's tests count on.
const TestLabel = "e2e.tailor.dev/test"

// NewNamespace is namespace name as the tests create it, with TestLabel
// added to labels.
func NewNamespace(name string, labels map[string]string) *corev1.Namespace {
	l := map[string]string{TestLabel: "true"}
	for k, v := range labels {
		l[k] = v
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
}

// Namespace creates namespace name for one test, waits until pods can be
// created in it, and deletes it when the test ends, its pods at once.
func Namespace(t testing.TB, cs kubernetes.Interface, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, NewNamespace(name, nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	if err := WaitDefaultServiceAccount(ctx, cs, name); err != nil {
		t.Fatalf("default ServiceAccount in %s never appeared: %v", name, err)
	}
	t.Cleanup(func() {
		// The namespace first: once it is terminating the apiserver creates
		// no pod in it, so a Deployment's ReplicaSet cannot replace the
		// pods deleted next with one that runs into the following test and
		// takes the node's CPU it counted as free.
		zero := int64(0)
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = cs.CoreV1().Pods(name).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	})
	return name
}

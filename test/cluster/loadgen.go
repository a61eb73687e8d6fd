package cluster

import (
	"context"
	"fmt"
	"net/http"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
)

// LoadgenImage is test/images/loadgen as hack/images.sh imports it.
const LoadgenImage = "tailor.local/loadgen:dev"

// Loadgen is a container "app" running the load generator, listening on
// :8080 for Drive.
func Loadgen() *builder.ContainerWrapper {
	return builder.Container("app").Image(LoadgenImage).Args("--listen=:8080")
}

// LoadgenPod is a pod of containers that is quick to delete and carries no
// token.
func LoadgenPod(ns, name string, containers ...*builder.ContainerWrapper) *corev1.Pod {
	p := builder.Pod(name).Namespace(ns).TerminationGracePeriod(0)
	for _, c := range containers {
		p.Container(c)
	}
	pod := p.Obj()
	pod.Spec.AutomountServiceAccountToken = new(bool)
	return pod
}

// Deployment is a Deployment of replicas pods labelled app=<name>, of the
// containers given, made as LoadgenPod makes a pod.
func Deployment(ns, name string, replicas int32, containers ...*builder.ContainerWrapper) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: LoadgenPod(ns, name, containers...).Spec},
		},
	}
}

// Drive asks the load generator of a running pod for a load, e.g.
// "/memory?size=200Mi" or "/cpu?millicores=800". A container counts as
// running before the load generator listens, so it asks again for a few
// seconds while nothing answers.
func Drive(ctx context.Context, p *corev1.Pod, path string) error {
	var code int
	var status string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		resp, err := http.Get("http://" + p.Status.PodIP + ":8080" + path)
		if err != nil {
			// Not listening yet: ask again.
			return false, nil //nolint:nilerr
		}
		code, status = resp.StatusCode, resp.Status
		_ = resp.Body.Close()
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("driving %s: the load generator never answered: %w", p.Name, err)
	}
	if code != http.StatusOK {
		return fmt.Errorf("load generator of %s answered %s to %s", p.Name, status, path)
	}
	return nil
}

// Policy is a TailorPolicy named name selecting the pods labelled
// app=<name> in ns, resizing each at most every 5s (the tests' pace), as
// mutate then changes it.
func Policy(ns, name string, mutate func(*v1alpha1.TailorPolicySpec)) *v1alpha1.TailorPolicy {
	p := &v1alpha1.TailorPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.TailorPolicySpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Behavior: &v1alpha1.Behavior{MinResizeInterval: &metav1.Duration{Duration: 5 * time.Second}},
		},
	}
	if mutate != nil {
		mutate(&p.Spec)
	}
	return p
}

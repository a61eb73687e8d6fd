//go:build e2e

package deploy

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/cluster"
)

// TestManagerInCluster installs the kustomize default for real, runs the
// manager's pod under its ServiceAccount with exactly the generated RBAC,
// and watches it resize a throttled pod in place: the permissions are
// proven by use, not only by SubjectAccessReview. Its metrics are scraped
// as a Prometheus would: HTTPS, only with a token the install's
// metrics-reader ClusterRole is bound to.
//
// The dev cluster has no kube-proxy, so the in-cluster apiserver Service is
// not routed; the manager is pointed at the apiserver's own address through
// KUBERNETES_SERVICE_HOST/PORT, which is what client-go's in-cluster config
// reads. Nothing else differs from an install.
func TestManagerInCluster(t *testing.T) {
	cluster.Quiet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := cluster.InstallCRDs(ctx, dyn); err != nil {
		t.Fatal(err)
	}
	host, port, err := cluster.APIServerEndpoint(ctx, clientset)
	if err != nil {
		t.Fatal(err)
	}
	id := rand.String(5)
	namespace := "deploy-" + id
	objs := renderKustomize(t, namespace, clusterPrefix+id+"-")
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			pointAtAPIServer(t, o, host, port)
		}
	}
	created := map[string]bool{"Deployment": true, "Service": true}
	for k := range applied {
		created[k] = true
	}
	in := install(ctx, t, namespace, nil, objs, created)
	// Stop the manager before the next suite starts its own.
	t.Cleanup(func() { deleteAndWait(t, namespace, in.deployment.GetName()) })

	manager := waitManagerReady(ctx, t, namespace)
	t.Logf("manager pod %s ready as ServiceAccount %s", manager.Name, manager.Spec.ServiceAccountName)

	work := cluster.Namespace(t, clientset, "deploy-work-"+id)
	start := time.Now()
	got, policies := raisedInPlace(ctx, t, work, namespace, manager.Name, hotPod{burn: "800m", memory: "24Mi",
		requests: [2]string{"100m", "64Mi"}, limits: [2]string{"200m", "256Mi"}, maxCPU: "400m"})
	t.Logf("cpu limit raised to %s by the in-cluster manager %s after the policy was created",
		got.Spec.Containers[0].Resources.Limits.Cpu().String(), time.Since(start).Round(100*time.Millisecond))

	// It wrote the policy's status and an event, as itself.
	err = wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := policies.Get(ctx, "hot", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pods, _, _ := unstructured.NestedSlice(p.Object, "status", "pods")
		return len(pods) > 0, nil
	})
	if err != nil {
		t.Errorf("policy status has no resized pod: %v", err)
	}
	evs, err := clientset.EventsV1().Events(work).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var resized bool
	for _, e := range evs.Items {
		resized = resized || (e.Reason == "Resized" && e.Regarding.Name == "hot" && e.ReportingController == "tailor")
	}
	if !resized {
		t.Errorf("no Resized event on pod hot from the manager")
	}
	if log := managerLog(t, namespace, manager.Name); strings.Contains(log, "forbidden") {
		t.Errorf("the manager was refused something its RBAC should grant:\n%s", log)
	}
	metricsOnlyToReaders(ctx, t, namespace, clusterPrefix+id+"-", manager, objs)
}

// hotPod is a pod that burns more CPU than its limit lets it, and the most
// its policy may raise it to.
type hotPod struct {
	burn, memory     string
	requests, limits [2]string
	maxCPU           string
}

// raisedInPlace creates pod "hot" and a TailorPolicy of it (cpu only, up to
// h.maxCPU) in work, and returns the pod once the manager running as pod
// manager in namespace has raised its cpu limit in place, with the
// policies' client; it fails with the manager's log when it does not
// within two minutes. Run from the manager's own pod, under its install's
// RBAC, this proves the permissions by use.
func raisedInPlace(ctx context.Context, t *testing.T, work, namespace, manager string, h hotPod) (*corev1.Pod, dynamic.ResourceInterface) {
	t.Helper()
	pod := builder.Pod("hot").Namespace(work).Label("app", "hot").TerminationGracePeriod(0).
		Container(builder.Container("app").Image("tailor.local/loadgen:dev").Args("--cpu="+h.burn, "--memory="+h.memory).
			Requests(h.requests[0], h.requests[1]).Limits(h.limits[0], h.limits[1])).Obj()
	pod.Spec.AutomountServiceAccountToken = new(bool)
	if _, err := clientset.CoreV1().Pods(work).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling.tailor.dev/v1alpha1",
		"kind":       "TailorPolicy",
		"metadata":   map[string]any{"name": "hot", "namespace": work},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app": "hot"}},
			"resourcePolicy": map[string]any{"containerPolicies": []any{map[string]any{
				"containerName": "*", "controlledResources": []any{"cpu"}, "maxAllowed": map[string]any{"cpu": h.maxCPU},
			}}},
			"behavior": map[string]any{"minResizeInterval": "5s"},
		},
	}}
	policies := dyn.Resource(schema.GroupVersionResource{Group: "autoscaling.tailor.dev", Version: "v1alpha1", Resource: "tailorpolicies"}).Namespace(work)
	if _, err := policies.Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	limit := resource.MustParse(h.limits[0])
	var got *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := clientset.CoreV1().Pods(work).Get(ctx, "hot", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = p
		return p.Spec.Containers[0].Resources.Limits.Cpu().Cmp(limit) > 0, nil
	})
	if err != nil {
		t.Fatalf("the manager did not raise the throttled pod's cpu limit: %v\nmanager log:\n%s", err, managerLog(t, namespace, manager))
	}
	return got, policies
}

// pointAtAPIServer makes the manager's pod reach the apiserver directly, and
// use the image imported on the node, resyncing quickly for the test.
func pointAtAPIServer(t *testing.T, d *unstructured.Unstructured, host, port string) {
	t.Helper()
	containers, _, err := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if err != nil || len(containers) != 1 {
		t.Fatalf("deployment %s: want one container: %v", d.GetName(), err)
	}
	c := containers[0].(map[string]any)
	env, _ := c["env"].([]any)
	c["env"] = append(env,
		map[string]any{"name": "KUBERNETES_SERVICE_HOST", "value": host},
		map[string]any{"name": "KUBERNETES_SERVICE_PORT", "value": port})
	c["imagePullPolicy"] = "Never"
	args, _ := c["args"].([]any)
	for i, a := range args {
		if strings.HasPrefix(a.(string), "--sync-period=") {
			args[i] = "--sync-period=2s"
		}
	}
	if err := unstructured.SetNestedSlice(d.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
}

func waitManagerReady(ctx context.Context, t *testing.T, namespace string) *corev1.Pod {
	t.Helper()
	var ready *corev1.Pod
	var last, lastPod string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=manager"})
		if err != nil {
			return false, err
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			last, lastPod = fmt.Sprintf("%s %s", p.Name, p.Status.Phase), p.Name
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					ready = p
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("manager pod not ready in %s: %v (last seen: %s)\nlog:\n%s", namespace, err, last, managerLog(t, namespace, lastPod))
	}
	return ready
}

func managerLog(t *testing.T, namespace, pod string) string {
	t.Helper()
	b, err := clientset.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{}).Do(context.Background()).Raw()
	if err == nil && len(b) == 0 {
		// Crash looping: the last run's log says why.
		b, err = clientset.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Previous: true}).Do(context.Background()).Raw()
	}
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(b)
}

// deleteAndWait deletes the manager's Deployment and waits until its pods
// are gone.
func deleteAndWait(t *testing.T, namespace, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := clientset.AppsV1().Deployments(namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptrTo(metav1.DeletePropagationForeground)})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting deployment %s: %v", name, err)
		return
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=manager"})
		return err == nil && len(pods.Items) == 0, err
	})
	if err != nil {
		t.Errorf("manager pods still in %s: %v", namespace, err)
	}
}

func ptrTo[T any](v T) *T { return &v }

// metricsOnlyToReaders scrapes the in-cluster manager's metrics as the
// install serves them, HTTPS on :8080: refused without a token (401) and
// to a ServiceAccount the install's metrics-reader ClusterRole is not bound
// to (403), given to one it is bound to, as to a Prometheus, with the
// resize it has just made counted.
func metricsOnlyToReaders(ctx context.Context, t *testing.T, namespace, prefix string, manager *corev1.Pod, objs []*unstructured.Unstructured) {
	t.Helper()
	var reader string
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" && strings.HasSuffix(o.GetName(), "metrics-reader") {
			reader = o.GetName()
		}
	}
	if reader == "" {
		t.Fatal("the install has no metrics-reader ClusterRole")
	}
	for _, sa := range []string{"scraper", "stranger"} {
		if _, err := clientset.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: prefix + "scraper"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: namespace}},
	}
	if _, err := clientset.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := clientset.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s: %v", binding.Name, err)
		}
	})
	token := func(sa string) string {
		tr, err := clientset.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	// The certificate is the manager's self-signed one: what is checked
	// here is who may read, not whom the client trusts.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // see above
	url := "https://" + net.JoinHostPort(manager.Status.PodIP, "8080") + "/metrics"
	scrape := func(bearer string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := scrape(""); code != http.StatusUnauthorized {
		t.Errorf("metrics without a token: %d %.200s; want 401", code, body)
	}
	if code, body := scrape(token("stranger")); code != http.StatusForbidden {
		t.Errorf("metrics as a ServiceAccount without %s: %d %.200s; want 403", reader, code, body)
	}
	scraper := token("scraper")
	var code int
	var body string
	// The binding reaches the apiserver's authorizer at once, but the
	// manager caches a review's answer for a while: ask until it is given.
	_ = wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(context.Context) (bool, error) {
		code, body = scrape(scraper)
		return code == http.StatusOK, nil
	})
	if code != http.StatusOK || !strings.Contains(body, `tailor_resizes_total{`) {
		t.Errorf("metrics as a ServiceAccount bound to %s: %d %.200s; want 200 with tailor_resizes_total", reader, code, body)
	}
	// And never over plain HTTP.
	resp, err := hc.Get("http://" + net.JoinHostPort(manager.Status.PodIP, "8080") + "/metrics")
	if err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("metrics served over plain HTTP")
		}
	}
}

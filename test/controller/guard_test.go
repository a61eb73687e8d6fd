//go:build controller

package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/manifests"
)

// clientAs is a client of the apiserver that makes every request as
// ServiceAccount ns/name (impersonated by the tests' admin).
func clientAs(t *testing.T, ns, name string) client.Client {
	t.Helper()
	user, groups := serviceAccountUser(ns, name)
	return impersonating(t, user, groups)
}

// impersonating is a client of the apiserver that makes every request as
// user, in groups (impersonated by the tests' admin).
func impersonating(t *testing.T, user string, groups []string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestGuardHoldsTheManager installs the chart's RBAC (with evictions) and
// its guard, as a release makes them, and asks as the manager's
// ServiceAccount: the apiserver refuses it the deletion of a Running pod,
// of a pod bound to a node, and of an unschedulable pod tailor did not
// size, each saying which and why, and lets it delete one it sized that no
// node has room for, with a UID precondition as replaceStuck sends, and
// evict a Running pod (an eviction is not a delete to the guard). Anyone
// else deletes as before.
func TestGuardHoldsTheManager(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := rand.String(5)
	release, ns, work := "guard-"+id, "guard-"+id, "guard-"+id+"-work"
	createNamespaces(ctx, t, ns, work)
	objs := renderChart(t, release, ns, "evictions.enabled=true")
	installed := installFrom(ctx, t, objs, append([]string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}, rbacKinds...)...)
	if !strings.Contains(strings.Join(installed, ","), "ValidatingAdmissionPolicyBinding "+release+"-tailor-guard") {
		t.Fatalf("the render has no guard: %v", installed)
	}
	manager := clientAs(t, ns, release+"-tailor")

	pod := func(name string) *builder.PodWrapper {
		return builder.Pod(name).Namespace(work).Container(builder.Container("app").Requests("100m", "64Mi"))
	}
	sized := func(p *builder.PodWrapper) *builder.PodWrapper {
		return p.Annotation(v1alpha1.AdmittedAnnotation, "web: app cpu 100m->300m")
	}
	unschedulable := []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/3 nodes are available: 3 Insufficient cpu."}}
	create := func(p *corev1.Pod, status corev1.PodStatus) *corev1.Pod {
		t.Helper()
		if err := apiClient.Create(ctx, p); err != nil {
			t.Fatalf("creating pod %s: %v", p.Name, err)
		}
		p.Status = status
		if err := apiClient.Status().Update(ctx, p); err != nil {
			t.Fatalf("writing the status of pod %s: %v", p.Name, err)
		}
		return p
	}
	runningPod := func(p *builder.PodWrapper) *corev1.Pod {
		obj := p.Node("node-a").Running().Obj()
		return create(obj, obj.Status)
	}
	running := runningPod(sized(pod("running")))
	evicted := runningPod(pod("evicted"))
	bound := create(sized(pod("bound").Node("node-a")).Obj(), corev1.PodStatus{Phase: corev1.PodPending})
	unsized := create(pod("unsized").Obj(), corev1.PodStatus{Phase: corev1.PodPending, Conditions: unschedulable})
	waiting := create(sized(pod("waiting")).Obj(), corev1.PodStatus{Phase: corev1.PodPending})
	stuck := create(sized(pod("stuck")).Obj(), corev1.PodStatus{Phase: corev1.PodPending, Conditions: unschedulable})

	// A dry run goes through admission and removes nothing. The apiserver
	// takes the guard up from its informer: ask until it judges.
	deleteAs := func(c client.Client, p *corev1.Pod, opts ...client.DeleteOption) error {
		return c.Delete(ctx, p, append([]client.DeleteOption{client.Preconditions{UID: &p.UID}}, opts...)...)
	}
	var err error
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		err = deleteAs(manager, running, client.DryRunAll)
		return err != nil && !apierrors.IsForbidden(err) || strings.Contains(fmt.Sprint(err), "ValidatingAdmissionPolicy"), nil
	})
	guard := fmt.Sprintf("ValidatingAdmissionPolicy '%[1]s-tailor-guard' with binding '%[1]s-tailor-guard' denied request: ", release)
	stuckOnly := "tailor deletes only a pod no node has room for (Pending, on no node, Unschedulable): "
	for _, tc := range []struct {
		pod  *corev1.Pod
		want string
	}{
		{running, guard + stuckOnly + "pod running is Running on node node-a"},
		{bound, guard + stuckOnly + "pod bound is Pending on node node-a"},
		{waiting, guard + stuckOnly + "pod waiting is Pending, not Unschedulable"},
		{unsized, guard + "tailor deletes only a pod it sized (annotated autoscaling.tailor.dev/admitted): pod unsized has no such annotation"},
	} {
		if tc.pod != running {
			err = deleteAs(manager, tc.pod, client.DryRunAll)
		}
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("the manager deleting pod %s: %v; want it refused: %s", tc.pod.Name, err, tc.want)
		}
	}
	if err := deleteAs(manager, stuck); err != nil {
		t.Errorf("the manager deleting pod stuck, which it sized and no node has room for: %v", err)
	}
	if err := manager.SubResource("eviction").Create(ctx, evicted, &policyv1.Eviction{}); err != nil {
		t.Errorf("the manager evicting pod evicted: %v", err)
	}
	// Nobody else's deletes are judged.
	if err := deleteAs(apiClient, running, client.DryRunAll); err != nil {
		t.Errorf("the tests' admin deleting pod running, dry run: %v", err)
	}
	other := clientAs(t, ns, "not-tailor")
	installFrom(ctx, t, []*unstructured.Unstructured{clusterRoleBinding(release+"-not-tailor", release+"-tailor-replace-unschedulable", ns, "not-tailor")},
		"ClusterRoleBinding")
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		err = deleteAs(other, running, client.DryRunAll)
		return err == nil, nil
	})
	if err != nil {
		t.Errorf("another ServiceAccount granted the same delete, deleting pod running: %v", err)
	}
}

// clusterRoleBinding binds ClusterRole role to ServiceAccount ns/sa.
func clusterRoleBinding(name, role, ns, sa string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": name},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": sa, "namespace": ns}},
	}}
}

// TestGuardTakesNoParameters: why the guard cannot also refuse the
// manager's resizes and evictions in a namespace without a TailorPolicy.
// A binding can only know that through parameters (a paramRef to the
// namespace's TailorPolicies), and the apiserver looks those up, and
// applies parameterNotFoundAction, before it evaluates the policy's
// matchConditions: a binding with parameterNotFoundAction Deny, matched on
// one ServiceAccount, refuses everyone in such a namespace, here the tests'
// admin. Should an apiserver start evaluating matchConditions first, this
// fails, and the guard can take the TailorPolicies as parameters.
func TestGuardTakesNoParameters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := rand.String(5)
	ns := "params-" + id
	createNamespaces(ctx, t, ns)
	objs, err := manifests.Decode([]byte(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: params-` + id + `
spec:
  failurePolicy: Fail
  paramKind: {apiVersion: autoscaling.tailor.dev/v1alpha1, kind: TailorPolicy}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["DELETE"], resources: ["pods"]}
  matchConditions:
  - name: tailor-manager
    expression: "request.userInfo.username == 'system:serviceaccount:tailor-system:tailor'"
  validations:
  - expression: "params != null"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: params-` + id + `
spec:
  policyName: params-` + id + `
  validationActions: [Deny]
  paramRef: {selector: {}, parameterNotFoundAction: Deny}
  matchResources:
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ` + ns + `}}
`))
	if err != nil {
		t.Fatal(err)
	}
	installFrom(ctx, t, objs, "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
	p := builder.Pod("p").Namespace(ns).Container(builder.Container("app")).Obj()
	if err := apiClient.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	// Until its informer of TailorPolicies has synced, the apiserver
	// refuses as well ("not yet synced to use for admission").
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		err = apiClient.Delete(ctx, p, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "no params found"), nil
	})
	if err == nil || !strings.Contains(err.Error(), "no params found") {
		t.Errorf("the tests' admin deleting a pod where a parameterNotFoundAction Deny binding for another user applies: %v; "+
			"want it refused (no params found), as the apiserver has done up to 1.37", err)
	}
}

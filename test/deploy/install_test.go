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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/tailorhq/tailor/test/cluster"
)

// clusterPrefix is what every cluster-scoped object this suite creates is
// named with, so the shared cluster's own RBAC is never touched.
const clusterPrefix = "deploy-test-"

const fieldManager = "tailor-deploy-test"

// restrictedNamespace labels enforce the restricted Pod Security Standard,
// which the manager's pod must pass.
var restrictedNamespace = map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}

// installed is what install created: the manager's ServiceAccount and pod.
type installed struct {
	namespace string
	// watched are the namespaces a tenant's install writes in.
	watched        []string
	serviceAccount string
	// agentServiceAccount is the node agent's, when the render has it.
	agentServiceAccount string
	deployment          *unstructured.Unstructured
}

// applied kinds are created for real (identity and permissions, which the
// access reviews need); everything else is only server-side dry-run applied,
// since no manager may run on the shared cluster.
var applied = map[string]bool{
	"Namespace": true, "ServiceAccount": true,
	"Role": true, "RoleBinding": true, "ClusterRole": true, "ClusterRoleBinding": true,
}

// install applies objs into namespace (and, for a tenant's install, its
// RoleBindings into the watched namespaces, made here) and registers their
// removal: the kinds in created for real, the rest as a server-side dry
// run.
func install(ctx context.Context, t *testing.T, namespace string, watched []string, objs []*unstructured.Unstructured, created map[string]bool) installed {
	t.Helper()
	got := installed{namespace: namespace, watched: watched}
	for _, ns := range watched {
		if _, err := clientset.CoreV1().Namespaces().Create(ctx, cluster.NewNamespace(ns, nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating namespace %s: %v", ns, err)
		}
		cleanup(t, corev1.SchemeGroupVersion.WithResource("namespaces"), "", ns)
	}
	hasNamespace := false
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			hasNamespace = true
		}
	}
	if !hasNamespace {
		ns := cluster.NewNamespace(namespace, restrictedNamespace)
		if _, err := clientset.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating namespace %s: %v", namespace, err)
		}
		cleanup(t, corev1.SchemeGroupVersion.WithResource("namespaces"), "", namespace)
	}
	// Namespaces first, so what lives in them can be applied.
	for _, pass := range []func(*unstructured.Unstructured) bool{
		func(o *unstructured.Unstructured) bool { return o.GetKind() == "Namespace" },
		func(o *unstructured.Unstructured) bool { return o.GetKind() != "Namespace" },
	} {
		for _, o := range objs {
			if !pass(o) {
				continue
			}
			into := namespace
			if slices.Contains(watched, o.GetNamespace()) && o.GetKind() == "RoleBinding" {
				into = o.GetNamespace()
			}
			apply(ctx, t, into, o, !created[o.GetKind()])
			switch o.GetKind() {
			case "ServiceAccount":
				into := &got.serviceAccount
				if strings.HasSuffix(o.GetName(), "agent") {
					into = &got.agentServiceAccount
				}
				if *into != "" {
					t.Fatalf("two ServiceAccounts rendered for one identity: %s and %s", *into, o.GetName())
				}
				*into = o.GetName()
			case "Deployment":
				got.deployment = o
			}
		}
	}
	if got.serviceAccount == "" || got.deployment == nil {
		t.Fatalf("the render has no ServiceAccount or no Deployment")
	}
	return got
}

func apply(ctx context.Context, t *testing.T, namespace string, o *unstructured.Unstructured, dryRun bool) {
	t.Helper()
	gvk := o.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("%s %s: %v", gvk.Kind, o.GetName(), err)
	}
	var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
	ns := ""
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if o.GetNamespace() != namespace {
			t.Fatalf("%s %s is rendered into namespace %q, not %q", gvk.Kind, o.GetName(), o.GetNamespace(), namespace)
		}
		ns = namespace
		ri = dyn.Resource(m.Resource).Namespace(ns)
	} else if !dryRun && gvk.Kind != "Namespace" && !strings.HasPrefix(o.GetName(), clusterPrefix) {
		t.Fatalf("refusing to create cluster-scoped %s %s: its name does not start with %s", gvk.Kind, o.GetName(), clusterPrefix)
	}
	if gvk.Kind == "Namespace" && o.GetName() != namespace {
		t.Fatalf("the render creates namespace %s, not %s", o.GetName(), namespace)
	}
	opts := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := ri.Apply(ctx, o.GetName(), o, opts); err != nil {
		t.Fatalf("applying %s %s (dry run %t): %v", gvk.Kind, o.GetName(), dryRun, err)
	}
	if dryRun {
		return
	}
	if ns == "" {
		cleanup(t, m.Resource, "", o.GetName())
	}
	// Namespaced objects go with their namespace.
}

// cleanup deletes a cluster-scoped object (or a namespace, with what is in
// it) when the test ends.
func cleanup(t *testing.T, gvr schema.GroupVersionResource, namespace, name string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := dyn.Resource(gvr).Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleaning up %s %s: %v", gvr.Resource, name, err)
		}
	})
}

// dryRunPod submits the Deployment's pod template as a pod, dry run, so the
// namespace's restricted Pod Security admission and the ServiceAccount
// admission judge it as they would the real pod.
func dryRunPod(ctx context.Context, t *testing.T, in installed) {
	t.Helper()
	tmpl, found, err := unstructured.NestedMap(in.deployment.Object, "spec", "template")
	if err != nil || !found {
		t.Fatalf("deployment %s has no pod template: %v", in.deployment.GetName(), err)
	}
	pod := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   tmpl["metadata"],
		"spec":       tmpl["spec"],
	}}
	pod.SetName(fmt.Sprintf("%s-dry-run", in.deployment.GetName()))
	pod.SetNamespace(in.namespace)
	_, err = dyn.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace(in.namespace).
		Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
	if err != nil {
		t.Fatalf("the manager's pod is refused in a restricted namespace: %v", err)
	}
}

//go:build controller

package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/manifests"
)

// tenantSample builds config/samples/tenant, the one tenant's install
// docs/install.md shows, with the eviction opt-in its comments offer
// turned on, with the cluster's kubectl, its tenant's namespaces team-a
// and team-b renamed to a and b wherever it names them, so that each run
// has its own (manifests.TenantSample).
func tenantSample(t *testing.T, a, b string) []*unstructured.Unstructured {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := manifests.TenantSample(root, t.TempDir(), a, b, true)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := (kustomizeBuild{dirs: []string{dir}}).build(t, tool(t, "TAILOR_KUBECTL"), t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// A tenant's install, scoped to its namespaces (Helm watchNamespaces, or
// config/samples/tenant with kustomize), admits the new pods of those
// namespaces only: its two admission policies, installed from the render
// as a user's install makes them, size a pod of a policy's target and a
// replacement of an evicted pod in a watched namespace at the policy's
// entries, and leave the same pods of the same policy in another
// namespace as their template says. Another tenant's pods are never
// admitted through this tenant's release.
func TestAdmissionOnlyInWatchedNamespaces(t *testing.T) {
	type install struct {
		// watched are the namespaces the install is scoped to; other is
		// one it is not.
		watched []string
		other   string
		render  func(t *testing.T) []*unstructured.Unstructured
	}
	id := rand.String(5)
	helmWatched := []string{"tenant-" + id + "-a", "tenant-" + id + "-b"}
	cases := map[string]install{
		"helm watchNamespaces": {watched: helmWatched, other: "tenant-" + id + "-other",
			render: func(t *testing.T) []*unstructured.Unstructured {
				objs, err := manifests.HelmTemplate{Helm: tool(t, "TAILOR_HELM"), Chart: chartDir, Release: "tenant-" + id,
					Namespace: "tailor-tenant-" + id, APIVersions: optionalAPIs,
					Set: []string{fmt.Sprintf("watchNamespaces={%s,%s}", helmWatched[0], helmWatched[1]), "evictions.enabled=true"}}.Objects()
				if err != nil {
					t.Fatal(err)
				}
				return objs
			}},
		"kustomize config/samples/tenant": {watched: []string{"team-" + id + "-a", "team-" + id + "-b"}, other: "team-" + id + "-c",
			render: func(t *testing.T) []*unstructured.Unstructured {
				return tenantSample(t, "team-"+id+"-a", "team-"+id+"-b")
			}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for _, ns := range append([]string{tc.other}, tc.watched...) {
				if err := apiClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
					t.Fatalf("creating namespace %s: %v", ns, err)
				}
			}
			installed := installFrom(ctx, t, tc.render(t), "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding")
			if len(installed) != 4 {
				t.Fatalf("the install has %d admission policies and bindings, want tailor-admission and tailor-recreate with theirs: %v", len(installed), installed)
			}

			// One policy per namespace, the same in each: an entry for the
			// new pods of Deployment web and one for the replacement of a
			// pod of ReplicaSet web-7c9f8 evicted. Written in this order:
			// the apiserver's admission reads policies from one informer,
			// which sees them in the order they were written, so once a
			// pod of the last namespace is admitted at its entries, the
			// others' entries have been seen too.
			const replicaSetUID = "0d1c1b6e-0000-4000-8000-0000000000c1"
			namespaces := append([]string{tc.other}, tc.watched...)
			for _, ns := range namespaces {
				writeTenantPolicy(ctx, t, ns, replicaSetUID)
			}
			newPod := func(ns string) *corev1.Pod {
				return builder.Pod("web-new").Namespace(ns).Label("pod-template-hash", "7c9f8").
					Owner("ReplicaSet", "web-7c9f8", "0d1c1b6e-0000-4000-8000-0000000000c2").
					Container(builder.Container("app").Requests("100m", "32Mi").Limits("200m", "64Mi")).Obj()
			}
			replacement := func(ns string) *corev1.Pod {
				return builder.Pod("web-replacement").Namespace(ns).Label("pod-template-hash", "7c9f8").
					Owner("ReplicaSet", "web-7c9f8", replicaSetUID).
					Container(builder.Container("app").Requests("100m", "32Mi").Limits("200m", "64Mi")).Obj()
			}
			const asTemplate, admitted, recreated = "100m/32Mi 200m/64Mi", "300m/32Mi 600m/64Mi", "250m/48Mi 500m/96Mi"
			last := tc.watched[len(tc.watched)-1]
			for _, ns := range append([]string{last}, tc.watched[:len(tc.watched)-1]...) {
				for _, p := range []struct {
					pod  *corev1.Pod
					want string
				}{{newPod(ns), admitted}, {replacement(ns), recreated}} {
					var got string
					if _, err := admitUntil(ctx, p.pod, func(created *corev1.Pod) bool {
						got = resourcesText(created)["app"]
						return got == p.want
					}); err != nil {
						t.Errorf("pod %s/%s in a watched namespace admitted with %s, want %s: %v", ns, p.pod.Name, got, p.want, err)
					}
				}
			}
			if t.Failed() {
				return
			}
			for _, p := range []*corev1.Pod{newPod(tc.other), replacement(tc.other)} {
				created := p.DeepCopy()
				if err := apiClient.Create(ctx, created, client.DryRunAll); err != nil {
					t.Fatal(err)
				}
				if got := resourcesText(created)["app"]; got != asTemplate || created.Annotations[v1alpha1.AdmittedAnnotation] != "" {
					t.Errorf("pod %s/%s in a namespace the install does not watch admitted with %s (annotations %v), want %s as its template says",
						tc.other, p.Name, got, created.Annotations, asTemplate)
				}
			}
		})
	}
}

// installFrom applies, for real and for the test's duration, the objects
// of the given kinds among objs (the admission policies and bindings of a
// render, its RBAC), and returns their kinds and names.
func installFrom(ctx context.Context, t *testing.T, objs []*unstructured.Unstructured, kinds ...string) []string {
	t.Helper()
	applier, err := manifests.NewApplier(restConfig, "tailor-tenant-test")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		kind := o.GetKind()
		if !slices.Contains(kinds, kind) {
			continue
		}
		if _, err := applier.Apply(ctx, o); err != nil {
			t.Fatal(err)
		}
		names = append(names, kind+" "+o.GetName())
		t.Cleanup(func() {
			err := apiClient.Delete(context.Background(), o)
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s %s: %v", kind, o.GetName(), err)
			}
		})
	}
	return names
}

// writeTenantPolicy creates TailorPolicy web in ns for Deployment web, with
// an admission entry (100m to 300m cpu) and a recreation entry for the
// replacement of a pod of ReplicaSet uid (to 250m/48Mi), both planned for
// the policy's generation from a template of 100m/32Mi, 200m/64Mi.
func writeTenantPolicy(ctx context.Context, t *testing.T, ns, uid string) {
	t.Helper()
	p := &v1alpha1.TailorPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: v1alpha1.TailorPolicySpec{
		TargetRef:    &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		UpdatePolicy: &v1alpha1.UpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlaceOrRecreate},
	}}
	if err := apiClient.Create(ctx, p); err != nil {
		t.Fatalf("creating TailorPolicy %s/web: %v", ns, err)
	}
	templateRequests, templateLimits := builder.List("100m", "32Mi"), builder.List("200m", "64Mi")
	p.Status.ObservedGeneration = p.Generation
	p.Status.Admission = &v1alpha1.Admission{TargetKind: "Deployment", TargetName: "web", ObservedGeneration: p.Generation,
		Summary: "app: cpu 100m->300m", Containers: []v1alpha1.AdmittedContainer{{Name: "app",
			TemplateRequests: templateRequests, TemplateLimits: templateLimits,
			Requests: builder.List("300m", "32Mi"), Limits: builder.List("600m", "64Mi")}}}
	p.Status.Recreations = []v1alpha1.Recreation{{OwnerUID: uid, OwnerKind: "ReplicaSet", EvictedPod: "web-old",
		EvictionTime: metav1.NewTime(time.Now()), ObservedGeneration: p.Generation,
		Containers: []v1alpha1.RecreatedContainer{{Name: "app", TemplateRequests: templateRequests, TemplateLimits: templateLimits,
			Requests: builder.List("250m", "48Mi"), Limits: builder.List("500m", "96Mi")}}}}
	if err := apiClient.Status().Update(ctx, p); err != nil {
		t.Fatalf("writing the status of TailorPolicy %s/web: %v", ns, err)
	}
}

// rbacKinds are what a render grants with.
var rbacKinds = []string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}

// serviceAccountUser is how the apiserver names ServiceAccount ns/name,
// with the groups it puts it in.
func serviceAccountUser(ns, name string) (string, []string) {
	return fmt.Sprintf("system:serviceaccount:%s:%s", ns, name), []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
}

// renderChart is the chart's render of release into ns with values set,
// for this apiserver, which serves every optional API.
func renderChart(t *testing.T, release, ns string, set ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := manifests.HelmTemplate{Helm: tool(t, "TAILOR_HELM"), Chart: chartDir, Release: release, Namespace: ns,
		APIVersions: optionalAPIs, Set: set}.Objects()
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// createNamespaces makes each namespace for the test (namespaces are not
// deleted: envtest runs no namespace controller to empty them).
func createNamespaces(ctx context.Context, t *testing.T, names ...string) {
	t.Helper()
	for _, ns := range names {
		if err := apiClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatalf("creating namespace %s: %v", ns, err)
		}
	}
}

// tenantNamespaces are the namespaces the install cases' tenants watch
// (helmCases, config/samples/tenant as it is): a tenant's RoleBindings go
// in them, so, as docs/install.md says, they exist before the install.
var tenantNamespaces = []string{"team-a", "team-b", "team-c"}

// ensureNamespaces makes each namespace that does not exist yet.
func ensureNamespaces(t *testing.T, names ...string) {
	t.Helper()
	for _, ns := range names {
		err := apiClient.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating namespace %s: %v", ns, err)
		}
	}
}

// TestTenantWritesOnlyInItsNamespaces installs a tenant's RBAC, as the
// chart (watchNamespaces) and config/samples/tenant (with evictions) make
// it, and asks the apiserver, with SubjectAccessReviews of the manager's
// ServiceAccount: it may resize, delete and evict pods, and write policy
// status, checkpoints and events, in each of its namespaces and nowhere
// else; it still reads pods and nodes everywhere.
func TestTenantWritesOnlyInItsNamespaces(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := rand.String(5)
	type install struct {
		ns, sa  string
		watched []string
		objs    func(t *testing.T) []*unstructured.Unstructured
	}
	a, b, other := "tw-"+id+"-a", "tw-"+id+"-b", "tw-"+id+"-other"
	// The sample's install namespace and prefix hold its tenant's first
	// namespace's name (tailor-team-a, team-a-): renamed with it.
	createNamespaces(ctx, t, a, b, other, "tw-"+id, "tailor-"+a)
	cases := map[string]install{
		"helm watchNamespaces": {ns: "tw-" + id, sa: "tw-" + id + "-tailor", watched: []string{a, b},
			objs: func(t *testing.T) []*unstructured.Unstructured {
				return renderChart(t, "tw-"+id, "tw-"+id, fmt.Sprintf("watchNamespaces={%s,%s}", a, b), "evictions.enabled=true")
			}},
		"kustomize config/samples/tenant": {ns: "tailor-" + a, sa: a + "-tailor", watched: []string{a, b},
			objs: func(t *testing.T) []*unstructured.Unstructured { return tenantSample(t, a, b) }},
	}
	type access struct{ verb, group, resource, sub, ns string }
	writes := []access{
		{"patch", "", "pods", "resize", ""}, {"delete", "", "pods", "", ""}, {"create", "", "pods", "eviction", ""},
		{"patch", "autoscaling.tailor.dev", "tailorpolicies", "status", ""}, {"create", "autoscaling.tailor.dev", "tailorcheckpoints", "", ""},
		{"delete", "autoscaling.tailor.dev", "tailorcheckpoints", "", ""}, {"create", "events.k8s.io", "events", "", ""},
	}
	// Each write in each namespace (allowed in the watched ones only), and
	// the reads a node's room needs, in another namespace and cluster-wide.
	want := map[access]bool{}
	for _, ns := range []string{a, b, other} {
		for _, w := range writes {
			w.ns = ns
			want[w] = ns != other
		}
	}
	for _, ns := range []string{other, ""} {
		for _, r := range []access{{"list", "", "pods", "", ns}, {"watch", "", "pods", "", ns}} {
			want[r] = true
		}
	}
	want[access{"list", "", "nodes", "", ""}] = true
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			installFrom(ctx, t, tc.objs(t), rbacKinds...)
			user, groups := serviceAccountUser(tc.ns, tc.sa)
			got := map[access]bool{}
			// RBAC reaches the authorizer through its informers: ask until
			// every answer is the one wanted, for a minute at most.
			err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
				same := true
				for a, w := range want {
					sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups,
						ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: a.ns, Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.sub}}}
					if err := apiClient.Create(ctx, sar); err != nil {
						return false, err
					}
					got[a] = sar.Status.Allowed
					same = same && got[a] == w
				}
				return same, nil
			})
			if err != nil {
				for a, w := range want {
					if got[a] != w {
						t.Errorf("%s may %s %s/%s (group %q) in namespace %q: %t, want %t", user, a.verb, a.resource, a.sub, a.group, a.ns, got[a], w)
					}
				}
			}
		})
	}
}

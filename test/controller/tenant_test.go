//go:build controller

package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/manifests"
)

// tenantSample is config/samples/tenant's kustomization, the one tenant's
// install docs/install.md shows, with the eviction component its comment
// offers turned on, as an overlay of the repository's config/default; its
// tenant's namespaces, team-a and team-b, renamed to a and b wherever it
// names them, so that each run has its own.
func tenantSample(t *testing.T, a, b string) kustomization {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "config", "samples", "tenant", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer("team-a", a, "team-b", b).Replace(string(data))
	var k kustomization
	if err := yaml.Unmarshal([]byte(text), &k); err != nil {
		t.Fatal(err)
	}
	if res, _ := k["resources"].([]any); len(res) != 1 || res[0] != "../../default" {
		t.Fatalf("config/samples/tenant's resources are %v, want ../../default", k["resources"])
	}
	k["resources"] = []string{"config/default"}
	k["components"] = []string{"config/components/eviction"}
	return k
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
				sample := tenantSample(t, "team-"+id+"-a", "team-"+id+"-b")
				objs, err := (kustomizeBuild{overlays: []kustomization{sample}}).build(t, tool(t, "TAILOR_KUBECTL"), t.TempDir(), false)
				if err != nil {
					t.Fatal(err)
				}
				return objs
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
			installed := installAdmissionFrom(ctx, t, tc.render(t))
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

// installAdmissionFrom applies, for real and for the test's duration, the
// admission policies and bindings among objs, and returns their names.
func installAdmissionFrom(ctx context.Context, t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	applier, err := manifests.NewApplier(restConfig, "tailor-tenant-test")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		kind := o.GetKind()
		if kind != "MutatingAdmissionPolicy" && kind != "MutatingAdmissionPolicyBinding" {
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

//go:build controller

package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
)

// installAdmissionPolicies applies the MutatingAdmissionPolicies
// tailor-admission and tailor-recreate from config/components, as the
// cluster installs them, for the test's duration, renamed after ns and
// bound to ns alone: no other test's pods are admitted through them.
func installAdmissionPolicies(t *testing.T, ns string) {
	t.Helper()
	installAdmissionPoliciesFor(t, ns, map[string]string{"kubernetes.io/metadata.name": ns})
}

// installAdmissionPoliciesFor is installAdmissionPolicies renamed after
// suffix and bound to the namespaces whose labels match namespaceLabels.
func installAdmissionPoliciesFor(t *testing.T, suffix string, namespaceLabels map[string]string) {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(restConfig)
	for _, path := range []string{
		filepath.Join("..", "..", "config", "components", "admission", "admission_policy.yaml"),
		filepath.Join("..", "..", "config", "components", "eviction", "recreate_admission.yaml"),
	} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			o := &unstructured.Unstructured{}
			if err := dec.Decode(&o.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatalf("%s: %v", path, err)
			}
			if len(o.Object) == 0 {
				continue
			}
			gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicies"}
			o.SetName(o.GetName() + "-" + suffix)
			if o.GetKind() == "MutatingAdmissionPolicyBinding" {
				gvr.Resource = "mutatingadmissionpolicybindings"
				policy, _, _ := unstructured.NestedString(o.Object, "spec", "policyName")
				if err := unstructured.SetNestedField(o.Object, policy+"-"+suffix, "spec", "policyName"); err != nil {
					t.Fatal(err)
				}
				if err := unstructured.SetNestedStringMap(o.Object, namespaceLabels,
					"spec", "matchResources", "namespaceSelector", "matchLabels"); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := dyn.Resource(gvr).Apply(context.Background(), o.GetName(), o, metav1.ApplyOptions{FieldManager: "tailor-controller-test", Force: true}); err != nil {
				t.Fatalf("applying %s %s: %v", o.GetKind(), o.GetName(), err)
			}
			name := o.GetName()
			t.Cleanup(func() {
				if err := dyn.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("deleting %s: %v", name, err)
				}
			})
		}
	}
}

// admitUntil creates pod with dryRun=All, which runs mutating admission
// and stores nothing, until check accepts the pod as admitted, for up to
// 15s: the apiserver reads policies from its own informer, which a status
// written by the test reaches within moments. It returns the last pod
// admitted.
func admitUntil(ctx context.Context, pod *corev1.Pod, check func(*corev1.Pod) bool) (*corev1.Pod, error) {
	var created *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		created = pod.DeepCopy()
		if err := apiClient.Create(ctx, created, client.DryRunAll); err != nil {
			return false, err
		}
		return check(created), nil
	})
	return created, err
}

// resourcesText is each container's and init container's cpu and memory,
// as "cpu/memory cpu/memory" (requests, then limits), by name.
func resourcesText(p *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, c := range append(append([]corev1.Container(nil), p.Spec.Containers...), p.Spec.InitContainers...) {
		r := c.Resources
		out[c.Name] = fmt.Sprintf("%s/%s %s/%s", r.Requests.Cpu(), r.Requests.Memory(), r.Limits.Cpu(), r.Limits.Memory())
	}
	return out
}

// The two admission policies on the real apiserver (issue #23, finding 3),
// with statuses written by hand and no controller: an entry applies only
// to the policy generation it was planned for, and a recreation entry only
// to a pod whose containers all still have the template values it was
// planned from.
func TestAdmissionAppliesOnlyCurrentEntries(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	installAdmissionPolicies(t, e.ns)
	ctx := e.ctx

	policy := func(name string) *v1alpha1.TailorPolicy {
		return e.policy(name, func(s *v1alpha1.TailorPolicySpec) {
			s.Selector = nil
			s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name}
			s.UpdatePolicy = &v1alpha1.UpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlaceOrRecreate}
			s.StartupBoost = &v1alpha1.StartupBoost{FactorPercent: ptrTo(int32(300))}
		})
	}
	boosted := func(gen int64) *v1alpha1.Admission {
		return &v1alpha1.Admission{TargetKind: "Deployment", ObservedGeneration: gen, Summary: "app: cpu 100m->300m (startup boost: app=300m)", Boost: "app=300m",
			Containers: []v1alpha1.AdmittedContainer{{Name: "app",
				TemplateRequests: builder.List("100m", "32Mi"), TemplateLimits: builder.List("200m", "64Mi"),
				Requests: builder.List("300m", "32Mi"), Limits: builder.List("600m", "64Mi")}}}
	}
	recreation := func(uid string, gen int64, templateCPU string) v1alpha1.Recreation {
		return v1alpha1.Recreation{OwnerUID: uid, OwnerKind: "ReplicaSet", EvictedPod: "old", EvictionTime: metav1.NewTime(time.Now()), ObservedGeneration: gen,
			Containers: []v1alpha1.RecreatedContainer{{Name: "app",
				TemplateRequests: builder.List(templateCPU, "32Mi"), TemplateLimits: builder.List("200m", "64Mi"),
				Requests: builder.List("250m", "48Mi"), Limits: builder.List("500m", "96Mi")}}}
	}
	writeStatus := func(p *v1alpha1.TailorPolicy, a *v1alpha1.Admission, rs ...v1alpha1.Recreation) {
		t.Helper()
		a.TargetName = p.Name
		p.Status.ObservedGeneration, p.Status.Admission, p.Status.Recreations = p.Generation, a, rs
		if err := apiClient.Status().Update(ctx, p); err != nil {
			t.Fatalf("writing the status of %s: %v", p.Name, err)
		}
	}
	const (
		editedRS  = "0d1c1b6e-0000-4000-8000-000000000001"
		currentRS = "0d1c1b6e-0000-4000-8000-000000000002"
		otherTmpl = "0d1c1b6e-0000-4000-8000-000000000003"
		plainRS   = "0d1c1b6e-0000-4000-8000-000000000004"
	)
	// Written first: a policy whose boost was removed after its entries
	// were planned, as a user does while no manager runs. Its status then
	// still says its generation was observed: only the entries' own
	// generation tells them stale.
	edited := policy("edited")
	writeStatus(edited, boosted(edited.Generation), recreation(editedRS, edited.Generation, "100m"))
	edited.Spec.StartupBoost = nil
	if err := apiClient.Update(ctx, edited); err != nil {
		t.Fatal(err)
	}
	edited.Status.ObservedGeneration = edited.Generation
	if err := apiClient.Status().Update(ctx, edited); err != nil {
		t.Fatal(err)
	}
	if edited.Status.Admission.ObservedGeneration >= edited.Generation {
		t.Fatalf("policy edited: generation %d, entry planned for %d", edited.Generation, edited.Status.Admission.ObservedGeneration)
	}
	// Written last: current entries, one of them planned from a template
	// whose cpu request was 150m.
	current := policy("current")
	writeStatus(current, boosted(current.Generation), recreation(currentRS, current.Generation, "100m"), recreation(otherTmpl, current.Generation, "150m"))

	pod := func(name, owner, hash, uid string) *corev1.Pod {
		return builder.Pod(name).Namespace(e.ns).Label("pod-template-hash", hash).Owner("ReplicaSet", owner+"-"+hash, uid).
			Container(builder.Container("app").Requests("100m", "32Mi").Limits("200m", "64Mi")).Obj()
	}
	// admitted: an admission policy of tailor's marked the pod as sized
	// by it (v1alpha1.AdmittedAnnotation), which is how the controller
	// tells a pod it may replace when no node has room for it.
	type want struct {
		app, boost string
		admitted   bool
	}
	asTemplate := want{app: "100m/32Mi 200m/64Mi"}
	// In order: a current entry is seen at admission before a pod is found
	// untouched, or "untouched" would prove nothing; the stale entries were
	// written before it.
	cases := []struct {
		name string
		pod  *corev1.Pod
		want want
	}{
		{name: "a current entry boosts a new pod of the target",
			pod:  pod("current-new", "current", "7c9f8", plainRS),
			want: want{app: "300m/32Mi 600m/64Mi", boost: "app=300m", admitted: true}},
		{name: "a current recreation entry sizes the replacement from the template it was planned from",
			pod:  pod("current-replacement", "current", "7c9f8", currentRS),
			want: want{app: "250m/48Mi 500m/96Mi", admitted: true}},
		{name: "a recreation entry planned from another template is not applied, and leaves the pod to nothing else",
			pod:  pod("current-other-template", "current", "7c9f8", otherTmpl),
			want: asTemplate},
		{name: "an entry planned before the policy was edited does not boost: the boost was removed",
			pod:  pod("edited-new", "edited", "5d8f", plainRS),
			want: asTemplate},
		{name: "a recreation entry planned before the policy was edited is not applied",
			pod:  pod("edited-replacement", "edited", "5d8f", editedRS),
			want: asTemplate},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got want
			_, err := admitUntil(ctx, tc.pod, func(created *corev1.Pod) bool {
				got = want{app: resourcesText(created)["app"], boost: created.Annotations[v1alpha1.BoostAnnotation], admitted: created.Annotations[v1alpha1.AdmittedAnnotation] != ""}
				return got == tc.want
			})
			if err != nil {
				t.Errorf("admitted with %+v, want %+v: %v", got, tc.want, err)
			}
		})
	}
}

// A policy edited while no manager syncs it, with the controller's own
// status writes (issue #23, finding 3): the entry planned for the startup
// boost stops boosting new pods as soon as the boost is removed; a sync
// that finds the policy invalid writes status.observedGeneration but plans
// nothing, and no entry applies; a sync of the valid policy plans again.
func TestAdmissionFollowsPolicyGeneration(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	installAdmissionPolicies(t, e.ns)
	ctx := e.ctx
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{*builder.Container("app").Requests("500m", "128Mi").Limits("1", "256Mi").Obj()}},
			},
		},
	}
	if err := apiClient.Create(ctx, d); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	boost := &v1alpha1.StartupBoost{FactorPercent: ptrTo(int32(300))}
	e.policy("web", func(s *v1alpha1.TailorPolicySpec) {
		s.Selector = nil
		s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
		s.StartupBoost = boost
	})
	edit := func(mutate func(*v1alpha1.TailorPolicySpec)) {
		t.Helper()
		p := e.getPolicy("web")
		mutate(&p.Spec)
		if err := apiClient.Update(ctx, p); err != nil {
			t.Fatalf("editing the policy: %v", err)
		}
	}
	newPod := builder.Pod("web-new").Namespace(e.ns).Label("app", "web").Label("pod-template-hash", "6b7c").
		Owner("ReplicaSet", "web-6b7c", "0d1c1b6e-0000-4000-8000-0000000000aa").
		Container(builder.Container("app").Requests("500m", "128Mi").Limits("1", "256Mi")).Obj()
	type want struct{ app, boost string }
	asTemplate := want{app: "500m/128Mi 1/256Mi"}
	boosted := want{app: "1500m/128Mi 3/256Mi", boost: "app=1500m"}
	admit := func(step string, w want) {
		t.Helper()
		var got want
		_, err := admitUntil(ctx, newPod, func(created *corev1.Pod) bool {
			got = want{app: resourcesText(created)["app"], boost: created.Annotations[v1alpha1.BoostAnnotation]}
			return got == w
		})
		if err != nil {
			p := e.getPolicy("web")
			var planned int64
			var summary string
			if a := p.Status.Admission; a != nil {
				planned, summary = a.ObservedGeneration, a.Summary
			}
			t.Errorf("%s: new pod admitted with %+v, want %+v: %v (generation %d, status.observedGeneration %d, status.admission planned for %d: %q)",
				step, got, w, err, p.Generation, p.Status.ObservedGeneration, planned, summary)
		}
	}

	e.reconcile("web")
	if a := e.getPolicy("web").Status.Admission; a == nil || a.Boost == "" {
		t.Fatalf("after a sync, status.admission = %+v, want a startup boost", a)
	}
	admit("the manager planned the boost", boosted)

	// The manager is gone: nothing reconciles from here until said.
	edit(func(s *v1alpha1.TailorPolicySpec) { s.StartupBoost = nil })
	admit("startupBoost removed, no sync since", asTemplate)

	// A '*' floor above the container's ceiling: the apiserver takes it,
	// the controller finds it contradictory and plans nothing.
	edit(func(s *v1alpha1.TailorPolicySpec) {
		s.StartupBoost = boost
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{
			{ContainerName: "*", MinAllowed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}},
			{ContainerName: "app", MaxAllowed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		}}
	})
	e.reconcile("web")
	p := e.getPolicy("web")
	if r := condition(p, v1alpha1.ConditionReady); r == nil || r.Reason != v1alpha1.ReasonInvalidPolicy {
		t.Fatalf("Ready = %+v, want reason %s", r, v1alpha1.ReasonInvalidPolicy)
	}
	if p.Status.ObservedGeneration != p.Generation {
		t.Fatalf("an invalid policy's sync wrote status.observedGeneration %d, want %d", p.Status.ObservedGeneration, p.Generation)
	}
	admit("the policy is invalid (boost back, bounds contradictory), its sync wrote observedGeneration", asTemplate)

	edit(func(s *v1alpha1.TailorPolicySpec) { s.ResourcePolicy = nil })
	e.reconcile("web")
	if a := e.getPolicy("web").Status.Admission; a == nil || a.ObservedGeneration != e.getPolicy("web").Generation {
		t.Fatalf("after a sync of the valid policy, status.admission = %+v, want it planned for generation %d", a, e.getPolicy("web").Generation)
	}
	admit("a manager synced the valid policy", boosted)
}

func ptrTo[T any](v T) *T { return &v }

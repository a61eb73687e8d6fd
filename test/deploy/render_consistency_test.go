package deploy

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestHelmMatchesKustomize renders each configuration both ways and requires
// the same roles, rule for rule, bound to the manager's ServiceAccount.
func TestHelmMatchesKustomize(t *testing.T) {
	const namespace, release = "deploy-render", "deploy-test-render"
	cases := map[string]struct {
		components []string
		set        []string
		wantRoles  []string
	}{
		"default": {
			wantRoles: []string{"ClusterRole manager", "ClusterRole metrics-kubelet", "Role leader-election"},
		},
		"metrics-server and eviction": {
			components: []string{"metrics-server", "eviction"},
			set:        []string{"metricsSource=metrics-server", "evictions.enabled=true"},
			wantRoles:  []string{"ClusterRole eviction", "ClusterRole manager", "ClusterRole metrics-server", "Role leader-election"},
		},
		"prometheus": {
			components: []string{"prometheus"},
			set:        []string{"metricsSource=prometheus"},
			wantRoles:  []string{"ClusterRole manager", "Role leader-election"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kust := roles(t, renderKustomize(t, namespace, release+"-", tc.components...), release+"-tailor-")
			if diff := cmp.Diff(tc.wantRoles, keys(kust)); diff != "" {
				t.Errorf("kustomize roles (-want,+got):\n%s", diff)
			}
			chart := roles(t, renderHelm(t, release, namespace, tc.set...), release+"-tailor-")
			if diff := cmp.Diff(kust, chart); diff != "" {
				t.Errorf("roles, kustomize vs helm (-kustomize,+helm):\n%s", diff)
			}
		})
	}
}

// roles maps "Kind name-without-prefix" to the rules of every Role and
// ClusterRole in objs, after checking that each is bound to the one
// ServiceAccount and that every binding refers to a rendered role.
func roles(t *testing.T, objs []*unstructured.Unstructured, prefix string) map[string][]any {
	t.Helper()
	out := map[string][]any{}
	var sa *unstructured.Unstructured
	bound := map[string]bool{}
	var bindings []*unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "Role", "ClusterRole":
			short, ok := strings.CutPrefix(o.GetName(), prefix)
			if !ok {
				t.Errorf("%s %s is not named %s...", o.GetKind(), o.GetName(), prefix)
			}
			rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
			out[o.GetKind()+" "+short] = rules
		case "RoleBinding", "ClusterRoleBinding":
			bindings = append(bindings, o)
		case "ServiceAccount":
			sa = o
		}
	}
	if sa == nil {
		t.Fatal("no ServiceAccount rendered")
	}
	for _, b := range bindings {
		kind, _, _ := unstructured.NestedString(b.Object, "roleRef", "kind")
		name, _, _ := unstructured.NestedString(b.Object, "roleRef", "name")
		short := kind + " " + strings.TrimPrefix(name, prefix)
		if _, ok := out[short]; !ok {
			t.Errorf("%s %s refers to %s %s, which is not rendered", b.GetKind(), b.GetName(), kind, name)
		}
		bound[short] = true
		subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
		want := []any{map[string]any{"kind": "ServiceAccount", "name": sa.GetName(), "namespace": sa.GetNamespace()}}
		if diff := cmp.Diff(want, subjects); diff != "" {
			t.Errorf("%s %s subjects (-want,+got):\n%s", b.GetKind(), b.GetName(), diff)
		}
	}
	for short := range out {
		if !bound[short] {
			t.Errorf("%s is rendered but not bound", short)
		}
	}
	return out
}

func keys(m map[string][]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestAdmissionRender requires both installs to render the same admission
// policies, each binding pointing at its policy under the install's name
// prefix: tailor-admission (new pods at the recommendation) by default and
// not when turned off, tailor-recreate (replacements of evicted pods) only
// with the eviction opt-in.
func TestAdmissionRender(t *testing.T) {
	const namespace, release = "deploy-render", "deploy-test-render"
	// By kind and the name's last word: admission or recreate.
	admission := func(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
		out := map[string]*unstructured.Unstructured{}
		for _, o := range objs {
			if o.GetKind() == "MutatingAdmissionPolicy" || o.GetKind() == "MutatingAdmissionPolicyBinding" {
				name := o.GetName()
				out[o.GetKind()+"/"+name[strings.LastIndex(name, "-")+1:]] = o
			}
		}
		return out
	}
	keys := func(m map[string]*unstructured.Unstructured) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	newPods := []string{"MutatingAdmissionPolicy/admission", "MutatingAdmissionPolicyBinding/admission"}
	both := []string{"MutatingAdmissionPolicy/admission", "MutatingAdmissionPolicy/recreate", "MutatingAdmissionPolicyBinding/admission", "MutatingAdmissionPolicyBinding/recreate"}
	for name, tc := range map[string]struct {
		objs []*unstructured.Unstructured
		want []string
	}{
		"kustomize default":                       {renderKustomize(t, namespace, release+"-"), newPods},
		"helm default":                            {renderHelm(t, release, namespace), newPods},
		"helm admission.enabled=false":            {renderHelm(t, release, namespace, "admission.enabled=false"), nil},
		"helm evictions, admissionPolicy=false":   {renderHelm(t, release, namespace, "evictions.enabled=true", "evictions.admissionPolicy=false"), newPods},
		"helm evictions, admission.enabled=false": {renderHelm(t, release, namespace, "evictions.enabled=true", "admission.enabled=false"), []string{"MutatingAdmissionPolicy/recreate", "MutatingAdmissionPolicyBinding/recreate"}},
	} {
		if diff := cmp.Diff(tc.want, keys(admission(tc.objs)), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s renders (-want,+got):\n%s", name, diff)
		}
	}
	kust := admission(renderKustomize(t, namespace, release+"-", "eviction"))
	chart := admission(renderHelm(t, release, namespace, "evictions.enabled=true"))
	for name, objs := range map[string]map[string]*unstructured.Unstructured{"kustomize": kust, "helm": chart} {
		if diff := cmp.Diff(both, keys(objs)); diff != "" {
			t.Fatalf("%s with evictions renders (-want,+got):\n%s", name, diff)
		}
		for _, which := range []string{"admission", "recreate"} {
			policy, binding := objs["MutatingAdmissionPolicy/"+which], objs["MutatingAdmissionPolicyBinding/"+which]
			if !strings.HasPrefix(policy.GetName(), release+"-") {
				t.Errorf("%s policy %s lacks the install's prefix %s-", name, policy.GetName(), release)
			}
			ref, _, _ := unstructured.NestedString(binding.Object, "spec", "policyName")
			if ref != policy.GetName() {
				t.Errorf("%s binding refers to policy %q; the policy is %q", name, ref, policy.GetName())
			}
		}
	}
	for _, key := range both {
		k, _, _ := unstructured.NestedMap(kust[key].Object, "spec")
		h, _, _ := unstructured.NestedMap(chart[key].Object, "spec")
		if diff := cmp.Diff(k, h); diff != "" {
			t.Errorf("%s spec, kustomize vs helm (-kustomize,+helm):\n%s", key, diff)
		}
	}
}

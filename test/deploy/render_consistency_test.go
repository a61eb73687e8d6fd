package deploy

import (
	"github.com/tailorhq/tailor/test/cluster"

	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestHelmMatchesKustomize renders each configuration both ways and requires
// the same roles, rule for rule, each bound to the same workload's
// ServiceAccount: the manager's, or the node agent's.
func TestHelmMatchesKustomize(t *testing.T) {
	cluster.Offline(t)
	const namespace, release = "deploy-render", "deploy-test-render"
	cases := map[string]struct {
		components []string
		set        []string
		// wantRoles maps each role to the workload whose ServiceAccount it
		// is bound to; "" is a role left for the cluster to bind
		// (unboundRoles).
		wantRoles map[string]string
	}{
		"default": {
			wantRoles: map[string]string{"ClusterRole manager": "manager", "ClusterRole manager-writes": "manager", "ClusterRole replace-unschedulable": "manager",
				"ClusterRole metrics-kubelet": "manager", "Role leader-election": "manager", "ClusterRole metrics-reader": ""},
		},
		"metrics-server and eviction": {
			components: []string{"metrics-server", "eviction"},
			set:        []string{"metricsSource=metrics-server", "evictions.enabled=true"},
			wantRoles: map[string]string{"ClusterRole eviction": "manager", "ClusterRole manager": "manager", "ClusterRole manager-writes": "manager",
				"ClusterRole replace-unschedulable": "manager", "ClusterRole metrics-server": "manager", "Role leader-election": "manager",
				"ClusterRole metrics-reader": ""},
		},
		"prometheus": {
			components: []string{"prometheus"},
			set:        []string{"metricsSource=prometheus"},
			wantRoles: map[string]string{"ClusterRole manager": "manager", "ClusterRole manager-writes": "manager", "ClusterRole replace-unschedulable": "manager",
				"Role leader-election": "manager", "ClusterRole metrics-reader": ""},
		},
		// The agent reads the managers' EndpointSlices and CA ConfigMap; the
		// manager reviews the agents' tokens, keeps the reports' TLS Secret
		// and ConfigMap, and keeps the kubelet source as fallback.
		"agent": {
			components: []string{"agent"},
			set:        []string{"agent.enabled=true"},
			wantRoles: map[string]string{"ClusterRole agent-reviewer": "manager", "ClusterRole manager": "manager", "ClusterRole manager-writes": "manager",
				"ClusterRole replace-unschedulable": "manager", "ClusterRole metrics-kubelet": "manager", "Role agent": "agent", "Role leader-election": "manager",
				"Role manager-agent-tls": "manager", "ClusterRole metrics-reader": ""},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := renderKustomize(t, namespace, release+"-", tc.components...)
			if slices.Contains(tc.components, "agent") {
				// The agent itself is config/agent, in a namespace of its own.
				objs = renderKustomizeAgent(t, namespace, namespace+"-nodes", release+"-")
			}
			kust := roles(t, objs, release+"-tailor-")
			if diff := cmp.Diff(tc.wantRoles, boundTo(kust)); diff != "" {
				t.Errorf("kustomize roles (-want,+got):\n%s", diff)
			}
			chart := roles(t, renderHelm(t, release, namespace, tc.set...), release+"-tailor-")
			if diff := cmp.Diff(kust, chart); diff != "" {
				t.Errorf("roles, kustomize vs helm (-kustomize,+helm):\n%s", diff)
			}
		})
	}
}

// boundRole is a role's rules and the workload ("manager" or "agent")
// whose ServiceAccount it is bound to.
type boundRole struct {
	Workload string
	Rules    []any
}

// roles maps "Kind name-without-prefix" to every Role and ClusterRole in
// objs, after checking that each is bound, to the ServiceAccount of the
// manager's Deployments or the agent's DaemonSet and to no other subject,
// except unboundRoles, which are bound to nothing, and that every binding
// refers to a rendered role.
func roles(t *testing.T, objs []*unstructured.Unstructured, prefix string) map[string]boundRole {
	t.Helper()
	out := map[string]boundRole{}
	// ServiceAccount "namespace/name" to the workload that runs as it.
	workloads := map[string]string{}
	accounts := map[string]bool{}
	var bindings []*unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "Role", "ClusterRole":
			short, ok := strings.CutPrefix(o.GetName(), prefix)
			if !ok {
				t.Errorf("%s %s is not named %s...", o.GetKind(), o.GetName(), prefix)
			}
			rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
			out[o.GetKind()+" "+short] = boundRole{Rules: rules}
		case "RoleBinding", "ClusterRoleBinding":
			bindings = append(bindings, o)
		case "ServiceAccount":
			accounts[o.GetNamespace()+"/"+o.GetName()] = true
		case "Deployment", "DaemonSet":
			workload := map[string]string{"Deployment": "manager", "DaemonSet": "agent"}[o.GetKind()]
			name, _, _ := unstructured.NestedString(o.Object, "spec", "template", "spec", "serviceAccountName")
			sa := o.GetNamespace() + "/" + name
			if other, ok := workloads[sa]; ok && other != workload {
				t.Errorf("the %s and the %s both run as ServiceAccount %s", other, workload, sa)
			}
			workloads[sa] = workload
		}
	}
	if len(workloads) == 0 {
		t.Fatal("no manager Deployment rendered")
	}
	for sa, workload := range workloads {
		if !accounts[sa] {
			t.Errorf("the %s runs as ServiceAccount %s, which is not rendered", workload, sa)
		}
	}
	for _, b := range bindings {
		kind, _, _ := unstructured.NestedString(b.Object, "roleRef", "kind")
		name, _, _ := unstructured.NestedString(b.Object, "roleRef", "name")
		short := kind + " " + strings.TrimPrefix(name, prefix)
		role, ok := out[short]
		if !ok {
			t.Errorf("%s %s refers to %s %s, which is not rendered", b.GetKind(), b.GetName(), kind, name)
			continue
		}
		subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
		var sa map[string]any
		if len(subjects) == 1 {
			sa, _ = subjects[0].(map[string]any)
		}
		workload := workloads[fmt.Sprintf("%v/%v", sa["namespace"], sa["name"])]
		if len(sa) != 3 || sa["kind"] != "ServiceAccount" || workload == "" {
			t.Errorf("%s %s is bound to %v: want the one ServiceAccount of the manager or the agent", b.GetKind(), b.GetName(), subjects)
			continue
		}
		if role.Workload != "" && role.Workload != workload {
			t.Errorf("%s is bound to both the %s and the %s", short, role.Workload, workload)
		}
		role.Workload = workload
		out[short] = role
	}
	for short, role := range out {
		if role.Workload == "" && !unboundRoles[short] {
			t.Errorf("%s is rendered but not bound", short)
		}
		if role.Workload != "" && unboundRoles[short] {
			t.Errorf("%s is bound to the %s: it is the cluster's to bind", short, role.Workload)
		}
	}
	return out
}

// unboundRoles are rendered for the cluster to bind, not bound to tailor's
// own ServiceAccounts: who may scrape the managers' metrics.
var unboundRoles = map[string]bool{"ClusterRole metrics-reader": true}

// boundTo maps each role to the workload it is bound to.
func boundTo(roles map[string]boundRole) map[string]string {
	out := map[string]string{}
	for k, r := range roles {
		out[k] = r.Workload
	}
	return out
}

// TestAdmissionRender requires both installs to render the same admission
// policies, each binding pointing at its policy under the install's name
// prefix: tailor-admission (new pods at the recommendation) by default and
// not when turned off, tailor-recreate (replacements of evicted pods) only
// with the eviction opt-in.
func TestAdmissionRender(t *testing.T) {
	cluster.Offline(t)
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

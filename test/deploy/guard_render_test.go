package deploy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/tailorhq/tailor/test/cluster"
	"github.com/tailorhq/tailor/test/manifests"
)

// TestGuardRender: both installs render the guard, the same policy and
// binding, naming the manager's own ServiceAccount, moved and prefixed;
// the chart leaves it out where the server does not serve
// ValidatingAdmissionPolicy (TestHelmNotes: and says what is lost).
func TestGuardRender(t *testing.T) {
	cluster.Offline(t)
	const namespace, release = "deploy-guard", "deploy-test-guard"
	guard := func(t *testing.T, objs []*unstructured.Unstructured) (policy, binding *unstructured.Unstructured, user string) {
		t.Helper()
		var sa string
		for _, o := range objs {
			switch o.GetKind() {
			case "ValidatingAdmissionPolicy":
				policy = o
			case "ValidatingAdmissionPolicyBinding":
				binding = o
			case "Deployment":
				sa, _, _ = unstructured.NestedString(o.Object, "spec", "template", "spec", "serviceAccountName")
				user = fmt.Sprintf("request.userInfo.username == 'system:serviceaccount:' + '%s' + ':' + '%s'", o.GetNamespace(), sa)
			}
		}
		if policy == nil || binding == nil {
			t.Fatalf("no guard rendered (policy %v, binding %v)", policy != nil, binding != nil)
		}
		return policy, binding, user
	}
	for name, objs := range map[string][]*unstructured.Unstructured{
		"helm":                     renderHelm(t, release, namespace),
		"kustomize":                renderKustomize(t, namespace, release+"-"),
		"kustomize tenant":         renderTenantSample(t, true),
		"helm, service account":    renderHelm(t, release, namespace, "serviceAccount.name=robot", "watchNamespaces={team-a}"),
		"kustomize with the agent": renderKustomizeAgent(t, namespace, namespace+"-nodes", release+"-"),
	} {
		t.Run(name, func(t *testing.T) {
			policy, binding, user := guard(t, objs)
			conditions, _, _ := unstructured.NestedSlice(policy.Object, "spec", "matchConditions")
			if len(conditions) != 1 || conditions[0].(map[string]any)["expression"] != user {
				t.Errorf("the guard's matchConditions are %v, want the one %q", conditions, user)
			}
			if ref, _, _ := unstructured.NestedString(binding.Object, "spec", "policyName"); ref != policy.GetName() {
				t.Errorf("the guard's binding refers to %q, the policy is %q", ref, policy.GetName())
			}
			for field, want := range map[string]any{"failurePolicy": "Fail", "paramKind": nil} {
				if got, _, _ := unstructured.NestedFieldNoCopy(policy.Object, "spec", field); got != want {
					t.Errorf("the guard's %s is %v, want %v", field, got, want)
				}
			}
			actions, _, _ := unstructured.NestedStringSlice(binding.Object, "spec", "validationActions")
			if !slices.Equal(actions, []string{"Deny"}) {
				t.Errorf("the guard's validationActions are %v, want [Deny]", actions)
			}
			for _, field := range []string{"paramRef", "matchResources"} {
				if got, found, _ := unstructured.NestedFieldNoCopy(binding.Object, "spec", field); found {
					t.Errorf("the guard's binding has %s %v: it judges the managers alone, wherever they ask", field, got)
				}
			}
		})
	}
	// The same spec both ways.
	specs := map[string]map[string]any{}
	for name, objs := range map[string][]*unstructured.Unstructured{"helm": renderHelm(t, release, namespace), "kustomize": renderKustomize(t, namespace, release+"-")} {
		for _, o := range objs {
			if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") {
				spec, _, _ := unstructured.NestedMap(o.Object, "spec")
				specs[name+" "+o.GetKind()] = spec
			}
		}
	}
	for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		if diff := cmp.Diff(specs["kustomize "+kind], specs["helm "+kind]); diff != "" {
			t.Errorf("%s spec, kustomize vs helm (-kustomize,+helm):\n%s", kind, diff)
		}
	}
	// A server that does not serve it: none.
	out, stderr, err := helmTemplate(t, []string{mutatingAdmissionPolicy}, release, namespace)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	for _, o := range decode(t, out) {
		if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") {
			t.Errorf("%s %s rendered for a server that does not serve it", o.GetKind(), o.GetName())
		}
	}
}

// renderTenantSample builds config/samples/tenant as it is (team-a and
// team-b, in tailor-team-a), with its eviction opt-in turned on or not.
func renderTenantSample(t *testing.T, eviction bool) []*unstructured.Unstructured {
	t.Helper()
	return renderTenantSampleFor(t, "team-a", "team-b", eviction)
}

// renderTenantSampleFor is renderTenantSample with the tenant's namespaces
// renamed a and b (manifests.TenantSample).
func renderTenantSampleFor(t *testing.T, a, b string, eviction bool) []*unstructured.Unstructured {
	t.Helper()
	dir, err := manifests.TenantSample(repoRoot(t), t.TempDir(), a, b, eviction)
	if err != nil {
		t.Fatal(err)
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build of config/samples/tenant (eviction %t): %v", eviction, err)
	}
	out, err := rm.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, out)
}

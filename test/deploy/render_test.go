package deploy

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/tailorhq/tailor/test/manifests"
)

var helmBinary = flag.String("helm", os.Getenv("TAILOR_HELM"), "helm binary (default: helm on PATH)")

// repoRoot is the root of the tailor checkout this file is in.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, this, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test source")
	}
	return filepath.Join(filepath.Dir(this), "..", "..")
}

// guardIdentity is the transformer an overlay that moves or prefixes the
// install lists, so that the guard names the manager's ServiceAccount as
// the overlay has made it.
const guardIdentity = "config/components/guard/identity"

// renderKustomize builds config/default with the named components from
// config/components, moved into namespace and with every name prefixed, the
// way a user's overlay would (the guard's identity transformer included).
func renderKustomize(t *testing.T, namespace, namePrefix string, components ...string) []*unstructured.Unstructured {
	t.Helper()
	k := map[string]any{
		"apiVersion":   "kustomize.config.k8s.io/v1beta1",
		"kind":         "Kustomization",
		"namespace":    namespace,
		"namePrefix":   namePrefix,
		"resources":    []string{"config/default"},
		"transformers": []string{guardIdentity},
	}
	var comps []string
	for _, c := range components {
		comps = append(comps, filepath.Join("config/components", c))
	}
	if len(comps) > 0 {
		k["components"] = comps
	}
	return kustomizeOverlay(t, t.TempDir(), k, fmt.Sprintf("config/default with components %v", components))
}

// kustomizeOverlay writes the kustomization k into the directory overlay,
// its resources and components named from the repository's root, builds it
// and returns its objects; what names the build in a failure.
func kustomizeOverlay(t *testing.T, overlay string, k map[string]any, what string) []*unstructured.Unstructured {
	t.Helper()
	if err := manifests.WriteOverlay(overlay, repoRoot(t), k); err != nil {
		t.Fatal(err)
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), overlay)
	if err != nil {
		t.Fatalf("kustomize build of %s: %v", what, err)
	}
	out, err := rm.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, out)
}

// renderKustomizeAgent builds the kustomize install with the node agent
// the way docs/agent.md tells a user who moves and prefixes it: config/default
// with the agent component in namespace, and config/agent in agentNamespace,
// both with namePrefix, each told the other's namespace and names. The
// objects of both builds are returned.
func renderKustomizeAgent(t *testing.T, namespace, agentNamespace, namePrefix string) []*unstructured.Unstructured {
	t.Helper()
	dir := t.TempDir()
	build := func(name string, k map[string]any) []*unstructured.Unstructured {
		overlay := filepath.Join(dir, name)
		if err := os.MkdirAll(overlay, 0o755); err != nil {
			t.Fatal(err)
		}
		return kustomizeOverlay(t, overlay, k, name)
	}
	agentSA := namePrefix + "tailor-agent"
	managers := build("managers", map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
		"namespace": namespace, "namePrefix": namePrefix,
		"resources":    []string{"config/default"},
		"components":   []string{"config/components/agent"},
		"transformers": []string{guardIdentity},
		"patches": []map[string]any{
			{"patch": fmt.Sprintf(`{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "tailor-manager", "namespace": "tailor-system"},
"spec": {"template": {"spec": {"containers": [{"name": "manager", "env": [{"name": "AGENT_NAMESPACE", "value": %q}, {"name": "AGENT_SERVICE_ACCOUNT", "value": %q}, {"name": "AGENT_SERVICE", "value": %q}]}]}}}}`, agentNamespace, agentSA, namePrefix+"tailor-manager-agents")},
			{"patch": fmt.Sprintf(`{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "tailor-agent", "namespace": "tailor-system"},
"subjects": [{"kind": "ServiceAccount", "name": %q, "namespace": %q}]}`, agentSA, agentNamespace)},
		},
	})
	agent := build("agent", map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
		"namespace": agentNamespace, "namePrefix": namePrefix,
		"resources": []string{"config/agent"},
		"patches": []map[string]any{
			{"patch": fmt.Sprintf(`{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "tailor-agent", "namespace": "tailor-agent"},
"spec": {"template": {"spec": {"containers": [{"name": "agent", "env": [{"name": "MANAGER_NAMESPACE", "value": %q}, {"name": "MANAGER_SERVICE", "value": %q}]}]}}}}`, namespace, namePrefix+"tailor-manager-agents")},
		},
	})
	return append(managers, agent...)
}

// helm returns the helm binary, or skips the test when there is none.
func helm(t *testing.T) string {
	t.Helper()
	if *helmBinary != "" {
		return *helmBinary
	}
	p, err := exec.LookPath("helm")
	if err != nil {
		t.Skip("no helm binary: set TAILOR_HELM or run make verify-deploy, which installs a pinned one")
	}
	return p
}

// mutatingAdmissionPolicy is what a server that serves
// MutatingAdmissionPolicy (Kubernetes 1.36 or later) lists among its API
// versions: the chart renders its admission policies only then.
// validatingAdmissionPolicy likewise (Kubernetes 1.30 or later), for the
// guard.
const (
	mutatingAdmissionPolicy   = "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy"
	validatingAdmissionPolicy = "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy"
)

// renderHelm runs helm template on deploy/helm/tailor, CRDs included, with
// --set values, for a server that serves MutatingAdmissionPolicy and
// ValidatingAdmissionPolicy.
func renderHelm(t *testing.T, release, namespace string, set ...string) []*unstructured.Unstructured {
	t.Helper()
	return renderHelmFor(t, []string{mutatingAdmissionPolicy, validatingAdmissionPolicy}, release, namespace, set...)
}

// renderHelmFor is renderHelm for a server that serves apiVersions
// (group/version/kind, on top of helm's built-in group/versions).
func renderHelmFor(t *testing.T, apiVersions []string, release, namespace string, set ...string) []*unstructured.Unstructured {
	t.Helper()
	stdout, stderr, err := helmTemplate(t, apiVersions, release, namespace, set...)
	if err != nil {
		t.Fatalf("helm template with %q: %v\n%s", set, err, stderr)
	}
	return decode(t, stdout)
}

// helmTemplate runs helm template and returns what it wrote.
func helmTemplate(t *testing.T, apiVersions []string, release, namespace string, set ...string) ([]byte, string, error) {
	t.Helper()
	out, err := manifests.HelmTemplate{Helm: helm(t), Chart: filepath.Join(repoRoot(t), "deploy/helm/tailor"), Release: release,
		Namespace: namespace, APIVersions: apiVersions, Set: set}.Run()
	var cerr *manifests.CommandError
	if errors.As(err, &cerr) {
		return out, cerr.Stderr, err
	}
	return out, "", err
}

func decode(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	objs, err := manifests.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

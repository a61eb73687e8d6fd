//go:build controller

package controller

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/tailorhq/tailor/test/manifests"
)

// kustomization is an overlay's kustomization.yaml, its resources and
// components named from the repository's root.
type kustomization map[string]any

// installOverlay is the overlay docs/install.md shows: config/default in
// tailor-system with components, and the image from a mirror.
func installOverlay(components ...string) kustomization {
	k := kustomization{
		"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
		"namespace":    "tailor-system",
		"resources":    []string{"config/default"},
		"images":       []map[string]any{{"name": "ghcr.io/tailorhq/tailor", "newName": "registry.example.com/tailor", "newTag": "v0.1.0"}},
		"transformers": []string{"config/components/guard/identity"},
	}
	if len(components) > 0 {
		var paths []string
		for _, c := range components {
			paths = append(paths, "config/components/"+c)
		}
		k["components"] = paths
	}
	return k
}

// movedAgent are the two overlays docs/agent.md describes for a user who
// moves and prefixes the install: config/default with the agent component
// in namespace, config/agent in agentNamespace, each told the other's
// namespace and names (test/deploy's renderKustomizeAgent builds the same).
func movedAgent(namespace, agentNamespace, prefix string) []kustomization {
	agentSA := prefix + "tailor-agent"
	return []kustomization{{
		"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
		"namespace": namespace, "namePrefix": prefix,
		"resources":    []string{"config/default"},
		"components":   []string{"config/components/agent"},
		"transformers": []string{"config/components/guard/identity"},
		"patches": []map[string]any{
			{"patch": fmt.Sprintf(`{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "tailor-manager", "namespace": "tailor-system"},
"spec": {"template": {"spec": {"containers": [{"name": "manager", "env": [{"name": "AGENT_NAMESPACE", "value": %q}, {"name": "AGENT_SERVICE_ACCOUNT", "value": %q}]}]}}}}`, agentNamespace, agentSA)},
			{"patch": fmt.Sprintf(`{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "tailor-agent", "namespace": "tailor-system"},
"subjects": [{"kind": "ServiceAccount", "name": %q, "namespace": %q}]}`, agentSA, agentNamespace)},
		},
	}, {
		"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
		"namespace": agentNamespace, "namePrefix": prefix,
		"resources": []string{"config/agent"},
		"patches": []map[string]any{
			{"patch": fmt.Sprintf(`{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "tailor-agent", "namespace": "tailor-agent"},
"spec": {"template": {"spec": {"containers": [{"name": "agent", "env": [{"name": "MANAGER_NAMESPACE", "value": %q}, {"name": "MANAGER_SERVICE", "value": %q}]}]}}}}`, namespace, prefix+"tailor-manager-agents")},
		},
	}}
}

// kustomizeBuild is one install by kustomize: the directories of config/
// built as they are, or overlays written for the test, applied together.
type kustomizeBuild struct {
	// dirs are kustomizations, from the repository's root or absolute.
	dirs     []string
	overlays []kustomization
	// compare: the kustomize API test/deploy renders with must build the
	// same. A few builds that between them use every kustomize feature
	// config/ does (components, JSON and strategic merge patches, deletes,
	// name references, namePrefix, images, labels): the API builds slowly
	// under -race.
	compare bool
}

// kustomizeBuilds are every overlay and component of config/: the two
// entry points as they are (config/default, and config/agent beside it),
// the CRDs alone, each component composed onto config/default as
// docs/install.md's overlay does, the agent's as docs/agent.md installs it
// (beside config/agent, and moved and prefixed), one tenant's install as
// config/samples/tenant makes it, and the components that
// go together: a metrics source with eviction and the dashboard (two
// sources together are refused, TestKustomizeRefusesTwoSources). The
// bases config/rbac and config/manager have no namespace of their own:
// TestKustomizeBases builds them, and they are sent as parts of
// config/default.
func kustomizeBuilds() map[string]kustomizeBuild {
	return map[string]kustomizeBuild{
		"config/default":                      {dirs: []string{"config/default"}},
		"config/default, config/agent":        {dirs: []string{"config/agent"}, overlays: []kustomization{installOverlay("agent")}, compare: true},
		"config/crd":                          {dirs: []string{"config/crd"}},
		"overlay":                             {overlays: []kustomization{installOverlay()}},
		"metrics-server":                      {overlays: []kustomization{installOverlay("metrics-server")}},
		"prometheus":                          {overlays: []kustomization{installOverlay("prometheus")}},
		"eviction":                            {overlays: []kustomization{installOverlay("eviction")}},
		"dashboard":                           {overlays: []kustomization{installOverlay("dashboard")}},
		"metrics-server, eviction, dashboard": {overlays: []kustomization{installOverlay("metrics-server", "eviction", "dashboard")}, compare: true},
		"prometheus, eviction":                {overlays: []kustomization{installOverlay("prometheus", "eviction")}},
		"agent, eviction, dashboard":          {dirs: []string{"config/agent"}, overlays: []kustomization{installOverlay("agent", "eviction", "dashboard")}},
		"agent moved and prefixed (agent.md)": {overlays: movedAgent("team-ops", "team-ops-nodes", "ops-"), compare: true},
		"one tenant (config/samples/tenant)":  {dirs: []string{"config/samples/tenant"}, compare: true},
	}
}

// build writes b's overlays under dir and builds each of b's kustomizations
// with kubectl kustomize; when compare, also with the kustomize API
// test/deploy builds with, which must build the same objects.
func (b kustomizeBuild) build(t *testing.T, kubectl, dir string, compare bool) ([]*unstructured.Unstructured, error) {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		return nil, err
	}
	dirs := make([]string, 0, len(b.dirs)+len(b.overlays))
	for _, d := range b.dirs {
		if !filepath.IsAbs(d) {
			d = filepath.Join(root, d)
		}
		dirs = append(dirs, d)
	}
	for i, k := range b.overlays {
		overlay := filepath.Join(dir, fmt.Sprint(i))
		if err := os.MkdirAll(overlay, 0o755); err != nil {
			return nil, err
		}
		if err := manifests.WriteOverlay(overlay, root, k); err != nil {
			return nil, err
		}
		dirs = append(dirs, overlay)
	}
	var out []*unstructured.Unstructured
	for _, d := range dirs {
		objs, err := manifests.KubectlKustomize(kubectl, d)
		if err != nil {
			return nil, err
		}
		if compare {
			rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), d)
			if err != nil {
				return nil, fmt.Errorf("the kustomize API builds %s: %w", d, err)
			}
			data, err := rm.AsYaml()
			if err != nil {
				return nil, err
			}
			api, err := manifests.Decode(data)
			if err != nil {
				return nil, err
			}
			if diff := cmp.Diff(byID(api), byID(objs)); diff != "" {
				return nil, fmt.Errorf("%s: the kustomize API (test/deploy) and kubectl kustomize build different objects (-api,+kubectl):\n%s", d, diff)
			}
		}
		out = append(out, objs...)
	}
	return out, nil
}

// byID keys objects by kind, namespace and name.
func byID(objs []*unstructured.Unstructured) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, o := range objs {
		out[o.GetKind()+" "+manifests.Name(o)] = o.Object
	}
	return out
}

// TestKustomizeDryRun builds every overlay and component of config/ with
// the kubectl the local cluster runs, checks that the kustomize API
// test/deploy renders with builds the same (where compare says), and
// sends every object to the apiserver as TestHelmValuesDryRun does.
func TestKustomizeDryRun(t *testing.T) {
	kubectl := tool(t, "TAILOR_KUBECTL")
	ensureNamespaces(t, tenantNamespaces...)
	renders := map[string][]*unstructured.Unstructured{}
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(2)
	for name, b := range kustomizeBuilds() {
		dir := t.TempDir()
		g.Go(func() error {
			objs, err := b.build(t, kubectl, dir, b.compare)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			mu.Lock()
			renders[name] = objs
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	dryRunAll(t, renders)
}

// TestKustomizeBases: the bases config/default composes build on their
// own with the cluster's kubectl.
func TestKustomizeBases(t *testing.T) {
	kubectl := tool(t, "TAILOR_KUBECTL")
	for _, d := range []string{"config/rbac", "config/manager"} {
		if _, err := (kustomizeBuild{dirs: []string{d}}).build(t, kubectl, t.TempDir(), false); err != nil {
			t.Error(err)
		}
	}
}

// TestKustomizeRefusesTwoSources: the metrics-source components each
// replace the manager's --metrics-source=kubelet, and an overlay listing
// two of them is refused at build time, as their kustomizations say ("use
// one source component at most"), not installed with one silently lost.
func TestKustomizeRefusesTwoSources(t *testing.T) {
	kubectl := tool(t, "TAILOR_KUBECTL")
	for _, pair := range [][]string{{"metrics-server", "prometheus"}, {"agent", "metrics-server"}, {"prometheus", "agent"}} {
		_, err := (kustomizeBuild{overlays: []kustomization{installOverlay(pair...)}}).build(t, kubectl, t.TempDir(), false)
		if err == nil {
			t.Errorf("kubectl kustomize with components %v builds: want it refused", pair)
			continue
		}
		var cerr *manifests.CommandError
		if !errors.As(err, &cerr) {
			t.Errorf("kubectl kustomize with components %v: %v, want kubectl to refuse it", pair, err)
			continue
		}
		t.Logf("components %v refused: %s", pair, strings.TrimSpace(cerr.Stderr))
	}
}

package deploy

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
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

// renderKustomize builds config/default with the named components from
// config/components, moved into namespace and with every name prefixed, the
// way a user's overlay would.
func renderKustomize(t *testing.T, namespace, namePrefix string, components ...string) []*unstructured.Unstructured {
	t.Helper()
	root := repoRoot(t)
	overlay := t.TempDir()
	// kustomize takes only relative paths to other kustomizations.
	rel := func(p string) string {
		r, err := filepath.Rel(overlay, filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	k := map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1",
		"kind":       "Kustomization",
		"namespace":  namespace,
		"namePrefix": namePrefix,
		"resources":  []string{rel("config/default")},
	}
	var comps []string
	for _, c := range components {
		comps = append(comps, rel(filepath.Join("config/components", c)))
	}
	if len(comps) > 0 {
		k["components"] = comps
	}
	data, err := yaml.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), overlay)
	if err != nil {
		t.Fatalf("kustomize build of config/default with components %v: %v", components, err)
	}
	out, err := rm.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, out)
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

// renderHelm runs helm template on deploy/helm/tailor, CRDs included, with
// --set values.
func renderHelm(t *testing.T, release, namespace string, set ...string) []*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", release, filepath.Join(repoRoot(t), "deploy/helm/tailor"), "--namespace", namespace, "--include-crds"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helm(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return decode(t, stdout.Bytes())
}

func decode(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("decoding rendered manifests: %v", err)
		}
		if len(obj) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
}

package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Decode splits a multi-document YAML (or JSON) stream into objects,
// leaving out empty documents.
func Decode(data []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("decoding rendered manifests: %w", err)
		}
		if len(obj) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
}

// HelmTemplate is one helm template of a chart: a directory or a packaged
// .tgz.
type HelmTemplate struct {
	// Helm is the helm binary.
	Helm      string
	Chart     string
	Release   string
	Namespace string
	// APIVersions are the group/version/kinds the server is taken to serve
	// (--api-versions), on top of helm's built-in group/versions.
	APIVersions []string
	// Set are --set values, name=value.
	Set []string
	// SetJSON are --set-json values, name=JSON, for values that are
	// objects or lists of objects.
	SetJSON []string
	// Kubeconfig, when set, renders against that server (--validate), as
	// helm install does: its discovery gives the capabilities, its version
	// the kubeVersion check, and an object of the render that exists and
	// is not the release's is refused. The CRDs are left out then: helm
	// install applies crds/ apart, and leaves those that exist.
	Kubeconfig string
}

// Args are the helm command line, CRDs included unless Kubeconfig is set.
func (h HelmTemplate) Args() []string {
	args := []string{"template", h.Release, h.Chart, "--namespace", h.Namespace}
	if h.Kubeconfig == "" {
		args = append(args, "--include-crds")
	}
	for _, v := range h.APIVersions {
		args = append(args, "--api-versions", v)
	}
	for _, s := range h.Set {
		args = append(args, "--set", s)
	}
	for _, s := range h.SetJSON {
		args = append(args, "--set-json", s)
	}
	if h.Kubeconfig != "" {
		args = append(args, "--validate", "--kubeconfig", h.Kubeconfig)
	}
	return args
}

// Run runs helm template and returns what it wrote to stdout; a failure
// carries helm's stderr.
func (h HelmTemplate) Run() ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(h.Helm, h.Args()...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &CommandError{Command: "helm " + strings.Join(h.Args(), " "), Err: err, Stderr: stderr.String()}
	}
	return stdout.Bytes(), nil
}

// Objects runs helm template and decodes what it rendered.
func (h HelmTemplate) Objects() ([]*unstructured.Unstructured, error) {
	out, err := h.Run()
	if err != nil {
		return nil, err
	}
	return Decode(out)
}

// CommandError is a render command that failed, with what it said.
type CommandError struct {
	Command string
	Err     error
	Stderr  string
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("%s: %v\n%s", e.Command, e.Err, e.Stderr)
}

func (e *CommandError) Unwrap() error { return e.Err }

// WriteOverlay writes k as dir/kustomization.yaml, its resources,
// components and transformers (paths from root, the repository's root)
// made relative to dir, since kustomize takes only relative paths to other
// kustomizations.
func WriteOverlay(dir, root string, k map[string]any) error {
	for _, key := range []string{"resources", "components", "transformers"} {
		paths, ok := k[key].([]string)
		if !ok {
			continue
		}
		rel := make([]string, len(paths))
		for i, p := range paths {
			r, err := filepath.Rel(dir, filepath.Join(root, p))
			if err != nil {
				return err
			}
			rel[i] = r
		}
		k[key] = rel
	}
	data, err := yaml.Marshal(k)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "kustomization.yaml"), data, 0o644)
}

// KubectlKustomize builds the kustomization in dir with kubectl's own
// kustomize (kubectl kustomize), as kubectl apply -k does.
func KubectlKustomize(kubectl, dir string) ([]*unstructured.Unstructured, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, &CommandError{Command: kubectl + " kustomize " + dir, Err: err, Stderr: stderr.String()}
	}
	return Decode(stdout.Bytes())
}

// Images are the images of every container and init container of the
// workloads among objs (Deployments, DaemonSets, StatefulSets, Jobs), by
// kind/namespace/name/container.
func Images(objs []*unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment", "DaemonSet", "StatefulSet", "Job":
		default:
			continue
		}
		for _, field := range []string{"initContainers", "containers"} {
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", field)
			for _, c := range containers {
				c, _ := c.(map[string]any)
				name, _ := c["name"].(string)
				image, _ := c["image"].(string)
				out[o.GetKind()+"/"+Name(o)+"/"+name] = image
			}
		}
	}
	return out
}

//go:build controller

package controller

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tailorhq/tailor/test/manifests"
)

// TestReleasedChartInstalls: the chart make release packaged (the .tgz in
// TAILOR_RELEASE_DIST, built at TAILOR_RELEASE_VERSION; hack/check.sh sets
// both after its release step) renders against this apiserver as helm
// install would (helm template --validate: the server's own discovery
// decides what is served, its version the chart's kubeVersion), installs
// the image of exactly that version, and every object it renders, by
// default and with every option, dry-run applies.
func TestReleasedChartInstalls(t *testing.T) {
	dist, version := os.Getenv("TAILOR_RELEASE_DIST"), os.Getenv("TAILOR_RELEASE_VERSION")
	if dist == "" || version == "" {
		t.Skip("TAILOR_RELEASE_DIST and TAILOR_RELEASE_VERSION are not set: hack/check.sh sets them to its make release output")
	}
	charts, _ := filepath.Glob(filepath.Join(dist, "tailor-*.tgz"))
	if len(charts) != 1 {
		t.Fatalf("%d packaged charts in %s, want 1: %v", len(charts), dist, charts)
	}
	helm := tool(t, "TAILOR_HELM")
	ns := makeInstallNamespaces(t)
	renders := map[string][]*unstructured.Unstructured{}
	// Its CRDs, which helm install applies apart from the render.
	crds, err := manifests.HelmTemplate{Helm: helm, Chart: charts[0], Release: "tailor", Namespace: ns.restricted}.Objects()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range crds {
		if o.GetKind() == "CustomResourceDefinition" {
			renders["crds/"] = append(renders["crds/"], o)
		}
	}
	if len(renders["crds/"]) != 2 {
		t.Errorf("the released chart has %d CRDs, want TailorPolicy's and TailorCheckpoint's", len(renders["crds/"]))
	}
	for name, c := range map[string]helmCase{"defaults": {}, "every option": helmCases(ns)["every option"]} {
		objs, err := manifests.HelmTemplate{Helm: helm, Chart: charts[0], Release: "tailor", Namespace: ns.restricted,
			Set: c.set, SetJSON: c.setJSON, Kubeconfig: kubeconfig}.Objects()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		renders[name] = objs
		images := manifests.Images(objs)
		if len(images) == 0 {
			t.Fatalf("%s: the released chart renders no container", name)
		}
		for container, image := range images {
			if want := "ghcr.io/tailorhq/tailor:" + version; image != want {
				t.Errorf("%s: %s runs %s, want %s", name, container, image, want)
			}
		}
		served := kinds(objs)
		for _, kind := range []string{"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"} {
			if served[kind] == 0 {
				t.Errorf("%s: no %s rendered though this apiserver serves it: the chart's capability check missed it", name, kind)
			}
		}
		if name == "every option" {
			for _, kind := range []string{"ServiceMonitor", "PodMonitor", "PrometheusRule", "DaemonSet"} {
				if served[kind] == 0 {
					t.Errorf("%s: no %s rendered", name, kind)
				}
			}
		}
		for _, o := range objs {
			if v, ok := o.GetLabels()["app.kubernetes.io/version"]; ok && v != version {
				t.Errorf("%s: %s %s is labelled app.kubernetes.io/version=%s, want %s", name, o.GetKind(), o.GetName(), v, version)
			}
		}
	}
	dryRunAll(t, renders)
}

// kinds counts objs by kind.
func kinds(objs []*unstructured.Unstructured) map[string]int {
	out := map[string]int{}
	for _, o := range objs {
		out[o.GetKind()]++
	}
	return out
}

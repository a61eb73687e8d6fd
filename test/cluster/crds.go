package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// CRDGVR is the resource of CustomResourceDefinitions.
var CRDGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs server-side applies every CRD in config/crd/bases and waits
// until each is Established.
func InstallCRDs(ctx context.Context, dyn dynamic.Interface) error {
	_, this, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(this), "..", "..", "config", "crd", "bases")
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return fmt.Errorf("listing CRDs in %s: %w", dir, err)
	}
	if len(paths) == 0 {
		return fmt.Errorf("no CRDs in %s", dir)
	}
	for _, path := range paths {
		if err := install(ctx, dyn, path); err != nil {
			return err
		}
	}
	return nil
}

func install(ctx context.Context, dyn dynamic.Interface, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd unstructured.Unstructured
	if err := yaml.Unmarshal(data, &crd.Object); err != nil {
		return fmt.Errorf("decoding %s: %w", path, err)
	}
	if _, err := dyn.Resource(CRDGVR).Apply(ctx, crd.GetName(), &crd, metav1.ApplyOptions{FieldManager: "tailor-tests", Force: true}); err != nil {
		return fmt.Errorf("installing %s: %w", path, err)
	}
	return wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got, err := dyn.Resource(CRDGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			c, _ := c.(map[string]any)
			if c["type"] == "Established" && c["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
}

// InstallVPACRD installs the VerticalPodAutoscaler CRD
// (test/testdata/vpa), which tailor yields to; no VPA component runs. It is
// left installed, as tailor's CRDs are. A manager looks for it once, as it
// starts, and it is cluster-wide: a suite installs it once, before its
// tests run (test/e2e's TestMain), not from a test.
func InstallVPACRD(ctx context.Context, dyn dynamic.Interface) error {
	_, this, _, _ := runtime.Caller(0)
	return install(ctx, dyn, filepath.Join(filepath.Dir(this), "..", "testdata", "vpa", "verticalpodautoscalers.yaml"))
}

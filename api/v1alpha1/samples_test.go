package v1alpha1

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/tailorhq/tailor/test/builder"
)

// The samples are what the README shows: they must use the real field names
// (a typo would be pruned by the apiserver without a word) and mean what
// their comments say.
func TestSamplesDecodeStrictly(t *testing.T) {
	files, err := filepath.Glob("../../config/samples/tailorpolicy_*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples found: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var p TailorPolicy
		if err := yaml.UnmarshalStrict(data, &p); err != nil {
			t.Errorf("%s does not decode into TailorPolicy: %v", f, err)
		}
		if p.Kind != "TailorPolicy" || p.APIVersion != GroupVersion.String() {
			t.Errorf("%s: got %s %s, want TailorPolicy %s", f, p.APIVersion, p.Kind, GroupVersion)
		}
	}
}

func TestFullSampleResolvesAsCommented(t *testing.T) {
	data, err := os.ReadFile("../../config/samples/tailorpolicy_full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var p TailorPolicy
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		t.Fatal(err)
	}
	app, err := p.Spec.PolicyFor("app")
	if err != nil {
		t.Fatal(err)
	}
	// "cpu still 4, from *": the named entry only raises the memory bound.
	if diff := cmp.Diff(builder.List("4", "16Gi"), app.MaxAllowed, quantityEqual); diff != "" {
		t.Errorf("app maxAllowed (-want,+got):\n%s", diff)
	}
	if !*app.AllowRestart || *app.ControlledValues != ControlledValuesRequestsAndLimits {
		t.Errorf("app: allowRestart %v controlledValues %v, want true RequestsAndLimits", *app.AllowRestart, *app.ControlledValues)
	}
	proxy, err := p.Spec.PolicyFor("istio-proxy")
	if err != nil {
		t.Fatal(err)
	}
	if *proxy.Mode != ContainerModeOff || *proxy.AllowRestart {
		t.Errorf("istio-proxy: mode %v allowRestart %v, want Off false", *proxy.Mode, *proxy.AllowRestart)
	}
	if diff := cmp.Diff([]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}, proxy.ControlledResources); diff != "" {
		t.Errorf("istio-proxy controlledResources (-want,+got):\n%s", diff)
	}
}

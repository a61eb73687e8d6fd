package advise

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/recommend"
	"github.com/tailorhq/tailor/test/builder"
)

func TestRecommenderConfigAppliesOverrides(t *testing.T) {
	five, thirty := int32(5), int32(30)
	spec := &v1alpha1.TailorPolicySpec{
		ResourcePolicy: &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{
			{ContainerName: "*", Recommender: &v1alpha1.RecommenderOverrides{CPUWindow: &metav1.Duration{Duration: 10 * time.Minute}, MemoryHeadroomPercent: &thirty}},
			{ContainerName: "app", Recommender: &v1alpha1.RecommenderOverrides{CPUHeadroomPercent: &five}},
		}},
		Behavior: &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownRules{StabilizationWindow: &metav1.Duration{Duration: time.Minute}}},
	}
	base := recommend.DefaultConfig()
	got, err := Config(base, spec, "app")
	if err != nil {
		t.Fatal(err)
	}
	if got.CPUWindow != 10*time.Minute || got.CPUHeadroom != 0.05 || got.MemoryHeadroom != 0.3 || got.Stabilization != time.Minute {
		t.Errorf("overrides not applied: window %s, cpu headroom %v, memory headroom %v, stabilization %s",
			got.CPUWindow, got.CPUHeadroom, got.MemoryHeadroom, got.Stabilization)
	}
	if got.MemoryWindow != base.MemoryWindow || !got.MemoryProfile {
		t.Errorf("memory window changed without an override: %s, daily profile %v", got.MemoryWindow, got.MemoryProfile)
	}
	spec.ResourcePolicy.ContainerPolicies[1].Recommender.MemoryWindow = &metav1.Duration{Duration: 7 * 24 * time.Hour}
	long, err := Config(base, spec, "app")
	if err != nil {
		t.Fatal(err)
	}
	if long.MemoryWindow != 7*24*time.Hour || long.MemoryProfile {
		t.Errorf("a policy's memoryWindow of 7 days gives window %s and daily profile %v, want the window held, without the profile", long.MemoryWindow, long.MemoryProfile)
	}
	other, err := Config(base, spec, "sidecar")
	if err != nil {
		t.Fatal(err)
	}
	if other.CPUHeadroom != base.CPUHeadroom || other.CPUWindow != 10*time.Minute {
		t.Errorf("sidecar should get '*' overrides only: headroom %v window %s", other.CPUHeadroom, other.CPUWindow)
	}
}

func TestRecommenderConfigRefusesContradictions(t *testing.T) {
	spec := &v1alpha1.TailorPolicySpec{ResourcePolicy: &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{
		{ContainerName: "*", MinAllowed: builder.List("2", "")},
		{ContainerName: "app", MaxAllowed: builder.List("1", "")},
	}}}
	_, err := Config(recommend.DefaultConfig(), spec, "app")
	if err == nil || !strings.Contains(err.Error(), "exceeds maxAllowed") {
		t.Fatalf("error = %v, want a min > max contradiction", err)
	}
}

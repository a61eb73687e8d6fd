package observation

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/test/builder"
)

// An observation takes, per container name, the largest usage, request and
// limit across the pods (NaN where none has one), the target from status,
// and per pod the requests now and as the template has them.
func TestObservation(t *testing.T) {
	now := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	a := builder.Pod("web-a").Namespace("ns").Node("n1").
		Container(builder.Container("app").Requests("300m", "200Mi").Limits("600m", "400Mi")).
		Container(builder.Container("log").Requests("50m", "32Mi")).Running().Obj()
	b := builder.Pod("web-b").Namespace("ns").Node("n2").
		Container(builder.Container("app").Requests("200m", "300Mi").Limits("400m", "600Mi")).
		Container(builder.Container("log").Requests("50m", "32Mi")).Running().Obj()
	usage := metrics.Result{Usage: map[metrics.Key]metrics.Usage{
		{Namespace: "ns", Pod: "web-a", Container: "app"}: {CPU: 0.25, Memory: 150 << 20},
		{Namespace: "ns", Pod: "web-b", Container: "app"}: {CPU: 0.1, Memory: 250 << 20},
	}}
	rec := &v1alpha1.Recommendation{ContainerRecommendations: []v1alpha1.RecommendedContainerResources{{
		ContainerName: "app", Target: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("280m"), corev1.ResourceMemory: resource.MustParse("290Mi")},
	}}}
	template := &corev1.PodTemplateSpec{Spec: builder.Pod("t").
		Container(builder.Container("app").Requests("500m", "512Mi")).
		Container(builder.Container("log").Requests("50m", "32Mi")).Obj().Spec}

	got := Of(now, []*corev1.Pod{a, b}, usage, rec, template)
	nan := math.NaN()
	want := Observation{
		Time: now,
		Containers: []ContainerObservation{
			{Name: "app", CPU: 0.25, Memory: 250 << 20, CPURequest: 0.3, CPULimit: 0.6, MemoryRequest: 300 << 20, MemoryLimit: 600 << 20,
				CPUTarget: 0.28, MemoryTarget: 290 << 20, Pods: 2, UsagePods: 2},
			{Name: "log", CPU: nan, Memory: nan, CPURequest: 0.05, CPULimit: nan, MemoryRequest: 32 << 20, MemoryLimit: nan,
				CPUTarget: nan, MemoryTarget: nan, Pods: 2},
		},
		Pods: []PodObservation{
			{Name: "web-a", Node: "n1", CPURequest: 0.35, MemoryRequest: 232 << 20, CPUBefore: 0.55, MemoryBefore: 544 << 20, BeforeKnown: true},
			{Name: "web-b", Node: "n2", CPURequest: 0.25, MemoryRequest: 332 << 20, CPUBefore: 0.55, MemoryBefore: 544 << 20, BeforeKnown: true},
		},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateNaNs(), cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("observation (-want,+got):\n%s", diff)
	}

	// Without a template (a selector policy), before is now.
	got = Of(now, []*corev1.Pod{a}, usage, nil, nil)
	if p := got.Pods[0]; p.BeforeKnown || p.CPUBefore != p.CPURequest || p.MemoryBefore != p.MemoryRequest {
		t.Errorf("without a template: %+v", p)
	}
}

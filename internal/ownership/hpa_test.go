package ownership

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func hpa(name, kind, target string, metrics ...autoscalingv2.MetricSpec) autoscalingv2.HorizontalPodAutoscaler {
	return autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: kind, Name: target},
			Metrics:        metrics,
		},
	}
}

func utilization(r corev1.ResourceName, pct int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: r, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &pct}}}
}

func TestHPAHolds(t *testing.T) {
	web := []Workload{{Group: "apps", Kind: "Deployment", Name: "web"}}
	// A selector policy's pods of Deployment web, through their ReplicaSet.
	webPods := []Workload{{Group: "apps", Kind: "ReplicaSet", Name: "web-5d9c"}, {Group: "apps", Kind: "Deployment", Name: "web"}}
	averageValue := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("100Mi")}}}
	containerMemory := autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
		Name: corev1.ResourceMemory, Container: "app", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType}}}
	external := autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{}}
	cases := map[string]struct {
		ref      []Workload
		hpas     []autoscalingv2.HorizontalPodAutoscaler
		wantAll  []corev1.ResourceName
		wantCtr  map[string][]corev1.ResourceName
		wantText string
	}{
		"no HPA": {ref: web},
		"an HPA of another workload": {ref: web, hpas: []autoscalingv2.HorizontalPodAutoscaler{
			hpa("api", "Deployment", "api", utilization(corev1.ResourceCPU, 70)),
			hpa("web-sts", "StatefulSet", "web", utilization(corev1.ResourceCPU, 70)),
		}},
		"cpu utilization holds cpu everywhere": {ref: web, hpas: []autoscalingv2.HorizontalPodAutoscaler{hpa("web", "Deployment", "web", utilization(corev1.ResourceCPU, 70))},
			wantAll:  []corev1.ResourceName{corev1.ResourceCPU},
			wantText: "HorizontalPodAutoscaler web scales on cpu utilization (70%): tailor keeps the cpu requests it divides usage by and sizes only those limits (a container without a limit keeps its values); other resources are sized as usual"},
		"a container's memory utilization holds that container's memory": {ref: web, hpas: []autoscalingv2.HorizontalPodAutoscaler{hpa("web", "Deployment", "web", containerMemory, external)},
			wantCtr:  map[string][]corev1.ResourceName{"app": {corev1.ResourceMemory}},
			wantText: "HorizontalPodAutoscaler web scales on container app's memory utilization: tailor keeps the memory of container app requests it divides usage by and sizes only those limits (a container without a limit keeps its values); other resources are sized as usual"},
		"AverageValue and external metrics read no request": {ref: web, hpas: []autoscalingv2.HorizontalPodAutoscaler{hpa("web", "Deployment", "web", averageValue, external)},
			wantText: "HorizontalPodAutoscaler web scales the workload on metrics that do not read requests: tailor sizes it as usual"},
		"no workload (a selector policy without pods)": {hpas: []autoscalingv2.HorizontalPodAutoscaler{hpa("web", "Deployment", "web", utilization(corev1.ResourceCPU, 70))}},
		"a selector policy's pods are held for their Deployment's HPA": {ref: webPods, hpas: []autoscalingv2.HorizontalPodAutoscaler{hpa("web", "Deployment", "web", utilization(corev1.ResourceCPU, 70))},
			wantAll:  []corev1.ResourceName{corev1.ResourceCPU},
			wantText: "HorizontalPodAutoscaler web scales on cpu utilization (70%): tailor keeps the cpu requests it divides usage by and sizes only those limits (a container without a limit keeps its values); other resources are sized as usual"},
		"an HPA of another group's Deployment is not the pods'": {ref: webPods, hpas: []autoscalingv2.HorizontalPodAutoscaler{{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "example.com/v1", Kind: "Deployment", Name: "web"},
				Metrics:        []autoscalingv2.MetricSpec{utilization(corev1.ResourceCPU, 70)},
			},
		}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h, text := HPAHolds(tc.ref, tc.hpas)
			var all []corev1.ResourceName
			for r := range h.All {
				all = append(all, r)
			}
			ctr := map[string][]corev1.ResourceName{}
			for c, rs := range h.Containers {
				for r := range rs {
					ctr[c] = append(ctr[c], r)
				}
			}
			if diff := cmp.Diff(tc.wantAll, all, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("all (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCtr, ctr, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("containers (-want,+got):\n%s", diff)
			}
			if text != tc.wantText {
				t.Errorf("text %q\nwant %q", text, tc.wantText)
			}
		})
	}
}

func q(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

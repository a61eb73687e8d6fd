package autoscale

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
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

// With a request held for an HPA, the limit alone follows the
// recommendation, never below the request; without a limit to size, or
// under RequestsOnly, nothing changes.
func TestDecideHoldsRequestsForHPA(t *testing.T) {
	cpuHeld := Holds{All: map[corev1.ResourceName]bool{corev1.ResourceCPU: true}}
	burstable := builder.Pod("p").Container(builder.Container("app").Requests("100m", "64Mi").Limits("200m", "128Mi")).Obj()
	cases := map[string]struct {
		pod       *corev1.Pod
		spec      *v1alpha1.TailorPolicySpec
		target    Target
		want      map[string]string
		wantSkips []SkipReason
	}{
		"a raise moves only the limit, at the pod's ratio": {
			pod: burstable, spec: spec(), target: Target{CPU: q("300m")},
			want: map[string]string{"app": "req.cpu=100m,lim.cpu=600m"},
		},
		"a lowering stops the limit at the request": {
			pod: burstable, spec: spec(), target: Target{CPU: q("20m")},
			want: map[string]string{"app": "req.cpu=100m,lim.cpu=100m"},
		},
		"memory is sized as usual": {
			pod: burstable, spec: spec(), target: Target{CPU: q("300m"), Memory: q("96Mi")},
			want: map[string]string{"app": "req.cpu=100m,lim.cpu=600m,req.memory=96Mi,lim.memory=192Mi"},
		},
		"no limit: nothing to size": {
			pod:       builder.Pod("p").Container(builder.Container("app").Requests("100m", "64Mi")).Obj(),
			spec:      spec(),
			target:    Target{CPU: q("300m")},
			want:      map[string]string{},
			wantSkips: []SkipReason{SkipHPA},
		},
		"RequestsOnly: nothing tailor may change": {
			pod:       burstable,
			spec:      spec(containerPolicy(v1alpha1.ContainerPolicy{ContainerName: "*", ControlledValues: ptr(v1alpha1.ControlledValuesRequestsOnly)})),
			target:    Target{CPU: q("300m")},
			want:      map[string]string{},
			wantSkips: []SkipReason{SkipHPA},
		},
		"a Guaranteed pod keeps its class: the limit cannot leave the request": {
			pod:       builder.Pod("p").Container(builder.Container("app").Requests("100m", "64Mi").Limits("100m", "64Mi")).Obj(),
			spec:      spec(),
			target:    Target{CPU: q("300m")},
			want:      map[string]string{},
			wantSkips: []SkipReason{SkipQoSChange},
		},
		"a limit reaching its request would make the pod Guaranteed: it stays a millicore above": {
			pod:    builder.Pod("p").Container(builder.Container("app").Requests("100m", "64Mi").Limits("200m", "64Mi")).Obj(),
			spec:   spec(),
			target: Target{CPU: q("20m")},
			want:   map[string]string{"app": "req.cpu=100m,lim.cpu=101m"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := Decide(Input{Pod: tc.pod, Spec: tc.spec, Targets: map[string]Target{"app": tc.target}, Holds: cpuHeld,
				WorkingSet: map[string]resource.Quantity{"app": resource.MustParse("40Mi")}, MemoryFloorHeadroom: 0.1, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, rr(d)); diff != "" {
				t.Errorf("desired (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSkips, reasons(d), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("skips (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestDecideKeepsValuesToTheByte: a value the decision keeps stays what it
// was, though it is not a whole number of MiB (a "1G"): rounded up to whole
// MiB, a memory request held for an HPA, or kept at maxAllowed's side of a
// working set above it, moved by a fraction of a MiB, and a resize was sent
// for it (found by the fuzz of DecideSync, TestDecideSyncInvariants).
func TestDecideKeepsValuesToTheByte(t *testing.T) {
	memoryHeld := Holds{All: map[corev1.ResourceName]bool{corev1.ResourceMemory: true}}
	pod := builder.Pod("p").Container(builder.Container("app").Requests("100m", "1G").Limits("200m", "2G")).Obj()
	cases := map[string]struct {
		spec   *v1alpha1.TailorPolicySpec
		holds  Holds
		target Target
		ws     string
		want   map[string]string
	}{
		"a request held for an HPA: only the limit moves": {
			spec: spec(), holds: memoryHeld, target: Target{Memory: q("1500Mi")}, ws: "100Mi",
			want: map[string]string{"app": "req.memory=1G,lim.memory=3000Mi"},
		},
		"a limit lowered: the held request stays to the byte": {
			spec: spec(), holds: memoryHeld, target: Target{Memory: q("900Mi")}, ws: "100Mi",
			want: map[string]string{"app": "req.memory=1G,lim.memory=1800Mi"},
		},
		"a working set above maxAllowed holds the request where it is": {
			spec:   spec(containerPolicy(v1alpha1.ContainerPolicy{ContainerName: "*", MaxAllowed: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}})),
			target: Target{Memory: q("100Mi")}, ws: "1500Mi",
			want: map[string]string{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := Decide(Input{Pod: pod, Spec: tc.spec, Targets: map[string]Target{"app": tc.target}, Holds: tc.holds,
				WorkingSet: map[string]resource.Quantity{"app": resource.MustParse(tc.ws)}, MemoryFloorHeadroom: 0.1, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, rr(d)); diff != "" {
				t.Errorf("desired (-want,+got):\n%s", diff)
			}
		})
	}
}

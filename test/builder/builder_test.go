package builder

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestPodBuilder(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	cases := map[string]struct {
		got  *corev1.Pod
		want corev1.PodSpec
	}{
		"container with requests, limits and policy": {
			got: Pod("p").Container(Container("app").Requests("500m", "").Limits("1", "512Mi").
				ResizePolicy(corev1.ResourceMemory, corev1.NotRequired).
				ResizePolicy(corev1.ResourceMemory, corev1.RestartContainer)).Obj(),
			want: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyAlways,
				Containers: []corev1.Container{{
					Name: "app", Image: DefaultImage,
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
						Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
					},
					ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}},
				}},
			},
		},
		"sidecar, init and pod-level": {
			got: Pod("p").RestartPolicy(corev1.RestartPolicyNever).Sidecar(Container("s")).InitContainer(Container("i").Image("busybox").Command("true")).
				PodRequests("1", "").PodLimits("", "1Gi").Node("n").Obj(),
			want: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				NodeName:      "n",
				InitContainers: []corev1.Container{
					{Name: "s", Image: DefaultImage, RestartPolicy: &always},
					{Name: "i", Image: "busybox", Command: []string{"true"}},
				},
				Resources: &corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got.Spec); diff != "" {
				t.Errorf("spec (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestObjReturnsIndependentCopies(t *testing.T) {
	w := Pod("p").Container(Container("app").Requests("1", ""))
	a := w.Obj()
	a.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
	b := w.Obj()
	if got := b.Spec.Containers[0].Resources.Requests.Cpu().String(); got != "1" {
		t.Errorf("second Obj() saw the first copy's mutation: cpu=%s, want 1", got)
	}
}

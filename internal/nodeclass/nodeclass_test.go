package nodeclass

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(labels map[string]string, cpu, mem string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
	}}}
}

func TestOf(t *testing.T) {
	const typ = "node.kubernetes.io/instance-type"
	cases := map[string]struct {
		node  *corev1.Node
		label string
		want  string
	}{
		"the label's value":              {node(map[string]string{typ: "m5.large"}, "2", "8Gi"), typ, "m5.large"},
		"no label named: the size":       {node(map[string]string{typ: "m5.large"}, "2", "8Gi"), "", "2cpu-8Gi"},
		"label missing: the size":        {node(nil, "64", "256Gi"), typ, "64cpu-256Gi"},
		"label empty: the size":          {node(map[string]string{typ: ""}, "4", "16Gi"), typ, "4cpu-16Gi"},
		"reservations round up":          {node(nil, "3920m", "15Gi"), "", "4cpu-16Gi"},
		"just past a power: the next":    {node(nil, "4100m", "17Gi"), "", "8cpu-32Gi"},
		"below one core and one GiB":     {node(nil, "500m", "512Mi"), "", "1cpu-1Gi"},
		"no allocatable said: the least": {&corev1.Node{}, "", "1cpu-1Gi"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Of(tc.node, tc.label); got != tc.want {
				t.Errorf("Of = %q, want %q", got, tc.want)
			}
		})
	}
}

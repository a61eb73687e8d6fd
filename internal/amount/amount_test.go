package amount

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestIn(t *testing.T) {
	l := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1500m"),
		corev1.ResourceMemory: resource.MustParse("1.5Gi"),
	}
	cases := map[string]struct {
		list corev1.ResourceList
		res  corev1.ResourceName
		want float64
	}{
		"cpu in cores":                 {list: l, res: corev1.ResourceCPU, want: 1.5},
		"memory in bytes":              {list: l, res: corev1.ResourceMemory, want: 1.5 * (1 << 30)},
		"absent":                       {list: l, res: corev1.ResourceEphemeralStorage, want: 0},
		"nil list":                     {res: corev1.ResourceCPU, want: 0},
		"sub-millicore cpu rounded up": {list: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100u")}, res: corev1.ResourceCPU, want: 0.001},
		"milli-bytes rounded up":       {list: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1500m")}, res: corev1.ResourceMemory, want: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := In(tc.list, tc.res); got != tc.want {
				t.Errorf("In = %v, want %v", got, tc.want)
			}
		})
	}
}

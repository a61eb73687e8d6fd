package amount

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Of is q as a number of r: cores for cpu, rounded up to a whole millicore
// (the finest cpu the kubelet sets); bytes for anything else, rounded up to
// a whole byte.
func Of(r corev1.ResourceName, q resource.Quantity) float64 {
	if r == corev1.ResourceCPU {
		return float64(q.MilliValue()) / 1000
	}
	return float64(q.Value())
}

// In is l's r as Of gives it, 0 when l has none.
func In(l corev1.ResourceList, r corev1.ResourceName) float64 {
	q, ok := l[r]
	if !ok {
		return 0
	}
	return Of(r, q)
}

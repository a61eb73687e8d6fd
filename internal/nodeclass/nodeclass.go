package nodeclass

import (
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/internal/amount"
)

// Of is node's class: the value of its label when label is set and the
// node has it, else its size (Size).
func Of(node *corev1.Node, label string) string {
	if v := node.Labels[label]; label != "" && v != "" {
		return v
	}
	return Size(node.Status.Allocatable)
}

// Size names allocatable by its CPU and memory, each rounded up to a power
// of two (cores, GiB), as "4cpu-16Gi". Powers of two because instance
// families grow by doubling: nodes of one type, whose allocatable differs
// by a few hundred MiB of system reservations, fall in one class, and a
// node twice the size in the next. A node with less than a core or a GiB
// counts as one.
func Size(allocatable corev1.ResourceList) string {
	cpu := amount.In(allocatable, corev1.ResourceCPU)
	gib := amount.In(allocatable, corev1.ResourceMemory) / (1 << 30)
	return fmt.Sprintf("%dcpu-%dGi", powerOfTwo(cpu), powerOfTwo(gib))
}

// powerOfTwo is the least power of two not below v, at least 1.
func powerOfTwo(v float64) int64 {
	if v <= 1 {
		return 1
	}
	return int64(1) << int(math.Ceil(math.Log2(v)))
}

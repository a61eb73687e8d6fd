package nsrules

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Rules are one namespace's LimitRanges and ResourceQuotas, as the
// controller's cache holds them. Quotas are judged by status.hard and
// status.used, as admission judges them, not by spec.hard.
type Rules struct {
	LimitRanges []corev1.LimitRange
	Quotas      []corev1.ResourceQuota
}

// Violation is one thing the apiserver would refuse of a pod.
type Violation struct {
	// Object is "LimitRange/<name>" or "ResourceQuota/<name>".
	Object string
	// Container is empty for what is judged on the pod's sums
	// (a Pod-type LimitRange item, a quota's usage).
	Container string
	// Resource is cpu or memory for a LimitRange; for a quota, the quota's
	// own resource name (requests.cpu, limits.memory, cpu, ...).
	Resource corev1.ResourceName
	// Message reads like the apiserver's.
	Message string
}

// resources are the only ones tailor sizes: every other resource a
// LimitRange or quota names is ignored, never reported.
var resources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// sortedLimitRanges orders by name: the apiserver walks its cache in an order
// of its own, so a fixed order is the best nsrules can give when two
// LimitRanges default the same resource (see Admitted).
func sortedLimitRanges(lrs []corev1.LimitRange) []corev1.LimitRange {
	out := slices.Clone(lrs)
	slices.SortStableFunc(out, func(a, b corev1.LimitRange) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func sortedQuotas(qs []corev1.ResourceQuota) []corev1.ResourceQuota {
	out := slices.Clone(qs)
	slices.SortStableFunc(out, func(a, b corev1.ResourceQuota) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// scaled returns the quantities at one common precision the way the
// LimitRanger compares them (plugin/pkg/admission/limitranger/admission.go,
// requestLimitEnforcedValues): milli-units unless one of them would overflow,
// then whole units. Both round up, so "100u" of cpu counts as 1m.
func scaled(qs ...resource.Quantity) []int64 {
	out := make([]int64, len(qs))
	milli := true
	for _, q := range qs {
		if q.Value() > resource.MaxMilliValue {
			milli = false
		}
	}
	for i, q := range qs {
		if milli {
			out[i] = q.MilliValue()
		} else {
			out[i] = q.Value()
		}
	}
	return out
}

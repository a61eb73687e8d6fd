package nsrules

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Charged is r with every quota that takes pod in charged n times what pod
// asks for beyond before (nil: all of it): what the quotas have left once
// those are admitted. A sync that chooses several raises charges each, so the
// next is judged against what the earlier ones leave; a new pod's size over
// its template's is charged once per replica the rollout creates.
func (r Rules) Charged(pod, before *corev1.Pod, n int) Rules {
	if len(r.Quotas) == 0 || n <= 0 {
		return r
	}
	add := podUsage(pod)
	if before != nil {
		add = increase(add, podUsage(before))
	}
	out := Rules{LimitRanges: r.LimitRanges, Quotas: make([]corev1.ResourceQuota, len(r.Quotas))}
	for i, q := range r.Quotas {
		out.Quotas[i] = q
		if len(sizedHard(q)) == 0 || !quotaMatches(q, pod) {
			continue
		}
		used := q.Status.Used.DeepCopy()
		for _, res := range sizedHard(q) {
			a, ok := add[res]
			u, known := used[res]
			if !ok || !known {
				continue
			}
			for range n {
				u.Add(a)
			}
			used[res] = u
		}
		out.Quotas[i].Status.Used = used
	}
	return out
}

// RequestRoom is how much more cpu and memory pod's requests may take under
// the quotas that take it in: the least of hard less used over their cpu and
// requests.cpu (memory alike). A resource no quota limits is left out; nil
// when none is limited.
func (r Rules) RequestRoom(pod *corev1.Pod) corev1.ResourceList {
	var out corev1.ResourceList
	for _, q := range r.Quotas {
		if !quotaMatches(q, pod) {
			continue
		}
		for _, res := range sizedHard(q) {
			var base corev1.ResourceName
			switch res {
			case corev1.ResourceCPU, corev1.ResourceRequestsCPU:
				base = corev1.ResourceCPU
			case corev1.ResourceMemory, corev1.ResourceRequestsMemory:
				base = corev1.ResourceMemory
			default:
				continue
			}
			left := q.Status.Hard[res].DeepCopy()
			left.Sub(q.Status.Used[res])
			if left.Sign() < 0 {
				left = resource.Quantity{Format: left.Format}
			}
			if out == nil {
				out = corev1.ResourceList{}
			}
			if have, ok := out[base]; !ok || left.Cmp(have) < 0 {
				out[base] = left
			}
		}
	}
	return out
}

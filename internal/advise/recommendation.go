package advise

import (
	"math"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/amount"
	"github.com/tailorhq/tailor/internal/boost"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/recommend"
)

// Recommendation is the workload's recommendation, by container name, for
// status and for the new pods the admission entry sizes: the advice against
// the largest value its pods have now, so it reads "hold" while they are
// within the band. Only names that have learnt from usage are in it, sorted
// by name; each target is within the policy's bounds, the uncapped one as
// the recommender said.
func (m *Model) Recommendation(spec *v1alpha1.TailorPolicySpec, pods []*corev1.Pod, now time.Time) []v1alpha1.RecommendedContainerResources {
	names := make([]string, 0, len(m.Containers))
	for n, wc := range m.Containers {
		if !wc.Fed.IsZero() {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var out []v1alpha1.RecommendedContainerResources
	for _, n := range names {
		cur := workloadValues(spec, pods, n, now)
		last := m.Containers[n].State.Recommend(recommend.Resources{CPU: cur.cpu, Memory: cur.memory, MemoryLimit: cur.memoryLimit}, time.Time{}, now)
		uncapped := quantities(last.CPU.Target, last.Memory.Target)
		target := uncapped.DeepCopy()
		if n != podcontainers.PodLevelName {
			if pol, err := spec.PolicyFor(n); err == nil {
				target = bounded(target, pol.MinAllowed, pol.MaxAllowed)
			}
		}
		out = append(out, v1alpha1.RecommendedContainerResources{
			ContainerName:  n,
			Target:         target,
			LowerBound:     quantities(last.CPU.Lower, last.Memory.Lower),
			UpperBound:     quantities(last.CPU.Upper, last.Memory.Upper),
			UncappedTarget: uncapped,
			TargetLimit:    limitOf(n, last),
		})
	}
	return out
}

// limitOf is a container's memory limit advised apart from its request,
// for status; nil when the recommender advises none (MemorySplit off) and
// for the pod-level resources, whose limit follows their request.
func limitOf(n string, rec recommend.Recommendation) corev1.ResourceList {
	if n == podcontainers.PodLevelName || rec.MemoryLimit.Target <= 0 {
		return nil
	}
	return corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(int64(rec.MemoryLimit.Target), resource.BinarySI)}
}

// values are a container's largest requests (and memory limit) across the
// workload's pods.
type values struct{ cpu, memory, memoryLimit float64 }

// workloadValues is the largest request of container n (podcontainers.PodLevelName:
// the pod's own) across pods. A starting pod's CPU is lent by the startup
// boost: it is not what new pods are sized from.
func workloadValues(spec *v1alpha1.TailorPolicySpec, pods []*corev1.Pod, n string, now time.Time) values {
	var cur values
	for _, p := range pods {
		if n == podcontainers.PodLevelName {
			if pr := p.Spec.Resources; pr != nil {
				cur.cpu = max(cur.cpu, amount.In(pr.Requests, corev1.ResourceCPU))
				cur.memory = max(cur.memory, amount.In(pr.Requests, corev1.ResourceMemory))
			}
			continue
		}
		if starting, _ := boost.Starting(p, spec.StartupBoost, now); !starting {
			cur.cpu = max(cur.cpu, Requested(p, n, corev1.ResourceCPU))
		}
		cur.memory = max(cur.memory, Requested(p, n, corev1.ResourceMemory))
		cur.memoryLimit = max(cur.memoryLimit, Limited(p, n, corev1.ResourceMemory))
	}
	return cur
}

// bounded clamps each entry of l into [lo, hi] where they are set.
func bounded(l, lo, hi corev1.ResourceList) corev1.ResourceList {
	for r, q := range l {
		if m, ok := lo[r]; ok && q.Cmp(m) < 0 {
			l[r] = m.DeepCopy()
		}
		if m, ok := hi[r]; ok && q.Cmp(m) > 0 {
			l[r] = m.DeepCopy()
		}
	}
	return l
}

// quantities is a resource list of cores and bytes, each left out when not
// above 0.
func quantities(cpu, mem float64) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu > 0 {
		l[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(cpu*1000+0.5), resource.DecimalSI)
	}
	if mem > 0 {
		// Whole MiB, rounded up as requests are: byte-exact figures would
		// change with every sample and rewrite status every sync.
		const mi = 1 << 20
		l[corev1.ResourceMemory] = *resource.NewQuantity(int64(math.Ceil(mem/mi))*mi, resource.BinarySI)
	}
	return l
}

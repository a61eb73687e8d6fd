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
	return m.recommendation(spec, pods, "", now)
}

// MaxClasses is the most node classes status lists (the CRD's bound).
const MaxClasses = 64

// ClassRecommendations is the recommendation of each class of node the
// pods run on (Pod.Class), sorted by class, as Recommendation gives the
// workload's: each learnt from, and said against the values of, the pods
// of its class. A class none of the pods is on now is left out: status
// says what sizes the pods there are. Of more than MaxClasses, those with
// the most pods are said; every pod is still sized at its own class's.
func (m *Model) ClassRecommendations(spec *v1alpha1.TailorPolicySpec, pods []Pod, now time.Time) []v1alpha1.NodeClassRecommendation {
	byClass := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if p.Class != "" {
			byClass[p.Class] = append(byClass[p.Class], p.Pod)
		}
	}
	classes := make([]string, 0, len(byClass))
	for c := range byClass {
		classes = append(classes, c)
	}
	// Status holds MaxClasses: those with the most pods.
	sort.Slice(classes, func(i, j int) bool {
		a, b := len(byClass[classes[i]]), len(byClass[classes[j]])
		return a > b || (a == b && classes[i] < classes[j])
	})
	classes = classes[:min(len(classes), MaxClasses)]
	sort.Strings(classes)
	var out []v1alpha1.NodeClassRecommendation
	for _, c := range classes {
		if recs := m.recommendation(spec, byClass[c], c, now); len(recs) > 0 {
			out = append(out, v1alpha1.NodeClassRecommendation{Class: c, Pods: int32(len(byClass[c])), ContainerRecommendations: recs})
		}
	}
	return out
}

// Largest is, per container name, the most each class's recommendation
// says of each figure: the size no class exceeds, which a reader of the
// workload's recommendation (status, the report) takes as its size.
func Largest(classes []v1alpha1.NodeClassRecommendation) []v1alpha1.RecommendedContainerResources {
	byName := map[string]*v1alpha1.RecommendedContainerResources{}
	var names []string
	for _, c := range classes {
		for _, r := range c.ContainerRecommendations {
			got, ok := byName[r.ContainerName]
			if !ok {
				cp := r.DeepCopy()
				byName[r.ContainerName] = cp
				names = append(names, r.ContainerName)
				continue
			}
			got.Target = larger(got.Target, r.Target)
			got.LowerBound = larger(got.LowerBound, r.LowerBound)
			got.UpperBound = larger(got.UpperBound, r.UpperBound)
			got.UncappedTarget = larger(got.UncappedTarget, r.UncappedTarget)
			got.TargetLimit = larger(got.TargetLimit, r.TargetLimit)
		}
	}
	sort.Strings(names)
	out := make([]v1alpha1.RecommendedContainerResources, 0, len(names))
	for _, n := range names {
		out = append(out, *byName[n])
	}
	return out
}

// larger is a with each of b's entries that is larger, or a lacks.
func larger(a, b corev1.ResourceList) corev1.ResourceList {
	for r, q := range b {
		if a == nil {
			a = corev1.ResourceList{}
		}
		if cur, ok := a[r]; !ok || q.Cmp(cur) > 0 {
			a[r] = q.DeepCopy()
		}
	}
	return a
}

// recommendation is Recommendation over the states learnt on class ("":
// the workload's, on every node), said against pods' values.
func (m *Model) recommendation(spec *v1alpha1.TailorPolicySpec, pods []*corev1.Pod, class string, now time.Time) []v1alpha1.RecommendedContainerResources {
	names := make([]string, 0, len(m.Containers))
	for key, wc := range m.Containers {
		if n, c := SplitKey(key); c == class && !wc.Fed.IsZero() {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var out []v1alpha1.RecommendedContainerResources
	for _, n := range names {
		cur := workloadValues(spec, pods, n, now)
		last := m.Containers[Key(n, class)].State.Recommend(recommend.Resources{CPU: cur.cpu, Memory: cur.memory, MemoryLimit: cur.memoryLimit}, time.Time{}, now)
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

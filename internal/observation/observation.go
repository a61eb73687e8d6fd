package observation

import (
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/amount"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/podcontainers"
)

// Observer is told what each sync of a policy saw and what tailor did, for
// a view of the policy over time (the dashboard). The controller calls it
// from its sync workers, so it must be safe for concurrent use and quick;
// it must not keep the pods.
type Observer interface {
	Observe(key types.NamespacedName, o Observation)
	Resized(key types.NamespacedName, m ResizeMark)
	Forget(key types.NamespacedName)
}

// Observation is one sync's figures per container name of the policy, and
// its pods' requests now and before tailor.
type Observation struct {
	Time       time.Time
	Containers []ContainerObservation
	Pods       []PodObservation
}

// PodObservation is one pod's requests (cores, bytes; containers and
// sidecars summed) now and as its workload's template has them, which is
// what the pod would ask for without tailor. Before is now where there is
// no template (a selector policy).
type PodObservation struct {
	Name, Node                string
	CPURequest, MemoryRequest float64
	CPUBefore, MemoryBefore   float64
	BeforeKnown               bool
}

// ContainerObservation is one container name across the policy's pods:
// each figure is the largest of its pods' (the pod that needs the most is
// the one a request must fit), NaN when no pod had one. CPU in cores,
// memory in bytes.
type ContainerObservation struct {
	Name                       string
	CPU, Memory                float64
	CPURequest, CPULimit       float64
	MemoryRequest, MemoryLimit float64
	CPUTarget, MemoryTarget    float64
	// Pods is how many pods run the container, UsagePods for how many
	// of them the source gave usable figures.
	Pods, UsagePods int
}

// ResultRefused marks a resize the apiserver refused.
const ResultRefused = "Refused"

// ResizeMark is one resize (or eviction) tailor sent, and how it ended.
type ResizeMark struct {
	Time time.Time
	Pod  string
	// Generation is the pod generation the resize produced; 0 for what
	// never reached the pod (refused, evicted).
	Generation int64
	// Result is a v1alpha1.ResizeResult or ResultRefused. A later mark
	// for the same pod and generation is the same resize's outcome.
	Result string
	Change string
	// Capped: the node's room cut a raise (the rest waits for room).
	// Restarts: the kubelet restarts a container to apply it, as its
	// resizePolicy says and the policy allows.
	Capped, Restarts bool
}

// Of summarises a sync for an Observer: usage from the source,
// requests and limits from the pods' specs, targets from the
// recommendation just written to status.
func Of(now time.Time, pods []*corev1.Pod, usage metrics.Result, rec *v1alpha1.Recommendation, template *corev1.PodTemplateSpec) Observation {
	o := Observation{Time: now}
	byName := map[string]*ContainerObservation{}
	var order []string
	get := func(name string) *ContainerObservation {
		c, ok := byName[name]
		if !ok {
			nan := math.NaN()
			c = &ContainerObservation{Name: name, CPU: nan, Memory: nan, CPURequest: nan, CPULimit: nan,
				MemoryRequest: nan, MemoryLimit: nan, CPUTarget: nan, MemoryTarget: nan}
			byName[name] = c
			order = append(order, name)
		}
		return c
	}
	for _, p := range pods {
		po := PodObservation{Name: p.Name, Node: p.Spec.NodeName, BeforeKnown: template != nil}
		for _, ct := range podcontainers.Running(&p.Spec) {
			cpu, mem := amount.In(ct.Resources.Requests, corev1.ResourceCPU), amount.In(ct.Resources.Requests, corev1.ResourceMemory)
			po.CPURequest += cpu
			po.MemoryRequest += mem
			if tc := templateContainer(template, ct.Name); tc != nil {
				cpu, mem = amount.In(tc.Resources.Requests, corev1.ResourceCPU), amount.In(tc.Resources.Requests, corev1.ResourceMemory)
			}
			po.CPUBefore += cpu
			po.MemoryBefore += mem

			c := get(ct.Name)
			c.Pods++
			c.CPURequest = larger(c.CPURequest, ct.Resources.Requests, corev1.ResourceCPU)
			c.CPULimit = larger(c.CPULimit, ct.Resources.Limits, corev1.ResourceCPU)
			c.MemoryRequest = larger(c.MemoryRequest, ct.Resources.Requests, corev1.ResourceMemory)
			c.MemoryLimit = larger(c.MemoryLimit, ct.Resources.Limits, corev1.ResourceMemory)
			if u, ok := usage.Usage[metrics.Key{Namespace: p.Namespace, Pod: p.Name, Container: ct.Name}]; ok {
				c.UsagePods++
				c.CPU = maxKnown(c.CPU, u.CPU)
				c.Memory = maxKnown(c.Memory, u.Memory)
			}
		}
		o.Pods = append(o.Pods, po)
	}
	if rec != nil {
		for _, r := range rec.ContainerRecommendations {
			c, ok := byName[r.ContainerName]
			if !ok {
				continue
			}
			c.CPUTarget = larger(c.CPUTarget, r.Target, corev1.ResourceCPU)
			c.MemoryTarget = larger(c.MemoryTarget, r.Target, corev1.ResourceMemory)
		}
	}
	for _, n := range order {
		o.Containers = append(o.Containers, *byName[n])
	}
	return o
}

func templateContainer(t *corev1.PodTemplateSpec, name string) *corev1.Container {
	if t == nil {
		return nil
	}
	for _, c := range podcontainers.Running(&t.Spec) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// larger is the larger of v and list's figure for name (cores for CPU),
// NaN when neither is known.
func larger(v float64, list corev1.ResourceList, name corev1.ResourceName) float64 {
	if _, ok := list[name]; !ok {
		return v
	}
	return maxKnown(v, amount.In(list, name))
}

func maxKnown(a, b float64) float64 {
	switch {
	case math.IsNaN(a):
		return b
	case math.IsNaN(b):
		return a
	}
	return math.Max(a, b)
}

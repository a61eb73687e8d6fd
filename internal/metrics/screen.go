package metrics

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/internal/amount"
	"github.com/tailorhq/tailor/internal/podcontainers"
)

const (
	// ReasonAboveLimit: the figure is more than the container (or its pod,
	// or the pod's containers together) can use under its limit.
	ReasonAboveLimit Reason = "AboveLimit"
	// ReasonAboveNode: the figure is more than the container's node has.
	ReasonAboveNode Reason = "AboveNodeCapacity"
)

// MemorySlack is how far above a limit (or a node's memory) a working set
// may read before it is garbage. The kernel holds a cgroup's usage to
// memory.max, the working set being that usage less the inactive page
// cache; it lets usage pass the limit only for a moment and by pages (an
// allocation that may not fail, a task being killed). 2% is that with
// room, and lets a forged figure add no more than 2%.
const MemorySlack = 0.02

// cpuStampError is how much longer than the span it is divided by a CPU
// rate's counter increase may really cover. A rate is an increase over the
// time between two reads; a source may date a counter by when it was
// scraped, not when the kernel's counter was read, and cAdvisor (behind
// the kubelet, metrics-server and most Prometheus set-ups) refreshes a
// container's counters every 10-15s. CFS lets a container use its quota
// per 100ms period, so a window's ends add at most two periods' worth:
// well inside it.
const cpuStampError = 15 * time.Second

// CPUAllowance is how many times its limit (or its node's cores) a CPU rate
// over window may read: 1 + 15s/window, at most 2 (a window under 15s, or
// none given). 1.25 for the Prometheus source's 1m rate, 2 for
// metrics-server's 15s and the agent's 5s.
func CPUAllowance(window time.Duration) float64 {
	return 1 + cpuStampError.Seconds()/max(window, cpuStampError).Seconds()
}

// Screen drops from u the figures no container can have: NaN, infinite or
// negative ones, a working set above the container's memory limit, its
// pod's, or its node's memory (beyond MemorySlack), CPU above the
// container's CPU limit, its pod's, or its node's cores (beyond
// CPUAllowance), and the pod's containers together above the pod's limits.
// The container is then held, with a Problem saying why, and a throttled
// share outside [0, 1] is dropped alone. capacity is each node's, by name
// (none known: not checked against one); a limit is the higher of the
// pod's spec and what its status says is in force, so a resize on its way
// either way does not make a figure garbage.
//
// resized says when a pod's resources last changed (zero: not known to
// have; nil: never): a figure measured over a span that reaches back before
// then may have been measured under other limits (a CPU rate straddling a
// startup boost given back), and is judged against its node alone.
//
// Every source's answer passes here before anything learns from it: a
// source (or a node's agent, or kubelet) that lets garbage through cannot
// make a peak of it. It returns the screened result and the problems it
// added.
func Screen(u Result, pods []*corev1.Pod, capacity map[string]corev1.ResourceList, resized func(*corev1.Pod) time.Time) (Result, []Problem) {
	out := Result{Usage: make(map[Key]Usage, len(u.Usage)), Problems: u.Problems}
	var rejected []Problem
	reject := func(k Key, m Metric, r Reason, detail string) {
		p := Problem{Key: k, Metric: m, Reason: r, Detail: detail}
		out.Problems = append(out.Problems, p)
		rejected = append(rejected, p)
	}
	seen := map[Key]bool{}
	for _, p := range pods {
		var sum struct{ cpu, mem float64 }
		var names []string
		node := capacity[p.Spec.NodeName]
		podLim := p.Spec.Resources
		var changed time.Time
		if resized != nil {
			changed = resized(p)
		}
		// straddles: some figure kept may have been measured under other
		// limits than the pod's now.
		straddles := false
		for _, c := range podcontainers.Names(p) {
			k := Key{Namespace: p.Namespace, Pod: p.Name, Container: c}
			v, ok := u.Usage[k]
			if !ok || seen[k] {
				continue
			}
			seen[k] = true
			cpuSpan, memSpan := true, true
			if !changed.IsZero() {
				cpuSpan, memSpan = v.Time.Add(-v.Window).After(changed), v.Time.After(changed)
			}
			straddles = straddles || !cpuSpan || !memSpan
			m, r, detail := implausible(v, limitsOf(p, c), podLim, node, cpuSpan, memSpan)
			if m != "" {
				reject(k, m, r, detail)
				continue
			}
			if t := v.Throttled; t != nil && (CheckValue(*t) != "" || *t > 1) {
				reject(k, MetricThrottling, ReasonInvalid, fmt.Sprintf("throttled share %v outside [0, 1]", *t))
				v.Throttled = nil
			}
			out.Usage[k] = v
			names = append(names, c)
			sum.cpu, sum.mem = sum.cpu+v.CPU, sum.mem+v.Memory
		}
		// The pod's limits bound its containers together.
		if podLim != nil && len(names) > 1 && !straddles {
			// The most any one container's window allows.
			cpuAllowed := 1.0
			for _, c := range names {
				cpuAllowed = max(cpuAllowed, CPUAllowance(out.Usage[Key{Namespace: p.Namespace, Pod: p.Name, Container: c}].Window))
			}
			var m Metric
			var detail string
			if lim := amount.In(podLim.Limits, corev1.ResourceMemory); lim > 0 && sum.mem > lim*(1+MemorySlack) {
				m, detail = MetricMemory, fmt.Sprintf("working sets %v together are more than the pod's memory limit (%s) allows (x%.2f)", sum.mem, quantity(podLim.Limits, corev1.ResourceMemory), 1+MemorySlack)
			} else if lim := amount.In(podLim.Limits, corev1.ResourceCPU); lim > 0 && sum.cpu > lim*cpuAllowed {
				m, detail = MetricCPU, fmt.Sprintf("cpu %v together is more than the pod's cpu limit (%s) allows (x%.2f)", sum.cpu, quantity(podLim.Limits, corev1.ResourceCPU), cpuAllowed)
			}
			if m != "" {
				for _, c := range names {
					k := Key{Namespace: p.Namespace, Pod: p.Name, Container: c}
					delete(out.Usage, k)
					reject(k, m, ReasonAboveLimit, detail)
				}
			}
		}
	}
	// Usage for containers of pods not given is judged without limits.
	keys := make([]Key, 0, len(u.Usage))
	for k := range u.Usage {
		if !seen[k] {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, k := range keys {
		v := u.Usage[k]
		if m, r, detail := implausible(v, nil, nil, nil, true, true); m != "" {
			reject(k, m, r, detail)
			continue
		}
		out.Usage[k] = v
	}
	out.Sort()
	sort.SliceStable(rejected, func(i, j int) bool { return rejected[i].String() < rejected[j].String() })
	return out, rejected
}

// implausible says which figure of v no container can have, and why; ""
// when none. lim are the container's limits, pod the pod's resources (nil:
// none), node its node's capacity (nil: unknown); cpuLimits and memLimits
// say whether the CPU and memory figures were measured under the limits
// the pod has now, and are judged against them.
func implausible(v Usage, lim corev1.ResourceList, pod *corev1.ResourceRequirements, node corev1.ResourceList, cpuLimits, memLimits bool) (Metric, Reason, string) {
	if CheckValue(v.CPU) != "" {
		return MetricCPU, ReasonInvalid, fmt.Sprintf("value %v", v.CPU)
	}
	if CheckValue(v.Memory) != "" {
		return MetricMemory, ReasonInvalid, fmt.Sprintf("value %v", v.Memory)
	}
	var podLim corev1.ResourceList
	if pod != nil {
		podLim = pod.Limits
	}
	cpuAllowed := CPUAllowance(v.Window)
	for _, b := range []struct {
		m       Metric
		r       corev1.ResourceName
		v       float64
		allowed float64
		limits  bool
	}{{MetricMemory, corev1.ResourceMemory, v.Memory, 1 + MemorySlack, memLimits}, {MetricCPU, corev1.ResourceCPU, v.CPU, cpuAllowed, cpuLimits}} {
		for _, bound := range []struct {
			l      corev1.ResourceList
			reason Reason
			what   string
		}{{node, ReasonAboveNode, "its node's capacity"}, {podLim, ReasonAboveLimit, "its pod's limit"}, {lim, ReasonAboveLimit, "its limit"}} {
			if bound.reason == ReasonAboveLimit && !b.limits {
				continue
			}
			if c := amount.In(bound.l, b.r); c > 0 && b.v > c*b.allowed {
				return b.m, bound.reason, fmt.Sprintf("%s %v is more than %s (%s) allows (x%.2f)", b.r, b.v, bound.what, quantity(bound.l, b.r), b.allowed)
			}
		}
	}
	return "", "", ""
}

// limitsOf is container c's limits: for each resource the higher of the
// pod's spec and what its status says is in force.
func limitsOf(p *corev1.Pod, c string) corev1.ResourceList {
	out := corev1.ResourceList{}
	higher := func(l corev1.ResourceList) {
		for r, q := range l {
			if cur, ok := out[r]; !ok || q.Cmp(cur) > 0 {
				out[r] = q
			}
		}
	}
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range list {
			if list[i].Name == c {
				higher(list[i].Resources.Limits)
			}
		}
	}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, st := range list {
			if st.Name == c && st.Resources != nil {
				higher(st.Resources.Limits)
			}
		}
	}
	return out
}

func quantity(l corev1.ResourceList, r corev1.ResourceName) string {
	q := l[r]
	return q.String()
}

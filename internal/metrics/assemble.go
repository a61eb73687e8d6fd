package metrics

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/internal/jvm"
	"github.com/tailorhq/tailor/internal/podcontainers"
)

// Figure is one value an adapter read, before it is judged. An adapter that
// could not read it leaves Set false and may say why in Reason and Detail.
type Figure struct {
	Value float64
	// Time is when the value was measured.
	Time   time.Time
	Set    bool
	Reason Reason
	Detail string
}

// Value returns a Figure read at t.
func Value(v float64, t time.Time) Figure { return Figure{Value: v, Time: t, Set: true} }

// Unusable returns a Figure that could not be read, and why.
func Unusable(reason Reason, detail string) Figure { return Figure{Reason: reason, Detail: detail} }

// Reading is everything an adapter read for one container.
type Reading struct {
	CPU, Memory, Throttled Figure
	// Window is what the CPU rate covers, and the throttled fraction too
	// unless ThrottledWindow says otherwise.
	Window time.Duration
	// ThrottledWindow is what the throttled fraction covers, for a source
	// that reads it from other samples than the CPU counter's (the
	// kubelet's /metrics/cadvisor beside its /metrics/resource, taken a
	// moment apart, may straddle a cAdvisor refresh); 0: Window.
	ThrottledWindow time.Duration
	// MemoryGrowth and MemoryPressure are optional: only the node agent
	// reads them (bytes a second; the PSI share of time stalled).
	MemoryGrowth, MemoryPressure Figure
	// MemoryAtRisk: the source saw the working set on course for its
	// limit before the next sync (the node agent).
	MemoryAtRisk bool
	// JVM is the container's JVM as the node agent read it (agent --jvm);
	// nil from every other source.
	JVM *jvm.Measured
}

// Assemble judges an adapter's readings for the asked pods: every running
// container of every pod gets either a Usage or Problems, never silence.
// Values must be finite and non-negative and measured within maxAge of now.
// Readings for containers that were not asked for are ignored.
func Assemble(pods []*corev1.Pod, readings map[Key]Reading, now time.Time, maxAge time.Duration) Result {
	res := Result{Usage: map[Key]Usage{}}
	for _, pod := range pods {
		for _, c := range podcontainers.Names(pod) {
			key := Key{Namespace: pod.Namespace, Pod: pod.Name, Container: c}
			if why := notRunning(pod, c); why != "" {
				res.Problem(key, MetricAll, ReasonNotRunning, why)
				continue
			}
			r, ok := readings[key]
			if !ok {
				res.Problem(key, MetricAll, ReasonMissing, "the source has no sample for this container")
				continue
			}
			cpuOK := judge(&res, key, MetricCPU, r.CPU, now, maxAge, true)
			memOK := judge(&res, key, MetricMemory, r.Memory, now, maxAge, true)
			if !cpuOK || !memOK {
				continue
			}
			u := Usage{Key: key, Window: r.Window, CPU: r.CPU.Value, Memory: r.Memory.Value, Time: r.CPU.Time}
			// The older of the two is when this usage is known to hold.
			if r.Memory.Time.Before(u.Time) {
				u.Time = r.Memory.Time
			}
			if judge(&res, key, MetricThrottling, r.Throttled, now, maxAge, false) {
				v := r.Throttled.Value
				u.Throttled = &v
				w := r.ThrottledWindow
				if w <= 0 {
					w = r.Window
				}
				u.ThrottledSince = r.Throttled.Time.Add(-w)
			}
			if judge(&res, key, MetricMemory, r.MemoryGrowth, now, maxAge, false) {
				v := r.MemoryGrowth.Value
				u.MemoryGrowth = &v
			}
			if judge(&res, key, MetricMemory, r.MemoryPressure, now, maxAge, false) {
				v := r.MemoryPressure.Value
				u.MemoryPressure = &v
			}
			u.MemoryAtRisk = r.MemoryAtRisk
			u.JVM = r.JVM
			res.Usage[key] = u
		}
	}
	res.Sort()
	return res
}

// judge reports whether f is usable, recording a Problem when it is not. An
// optional figure that was simply not read is not a problem.
func judge(res *Result, key Key, m Metric, f Figure, now time.Time, maxAge time.Duration, required bool) bool {
	switch {
	case !f.Set && f.Reason == "" && !required:
		return false
	case !f.Set:
		reason, detail := f.Reason, f.Detail
		if reason == "" {
			reason, detail = ReasonMissing, "the source has no sample for this container"
		}
		res.Problem(key, m, reason, detail)
		return false
	case CheckValue(f.Value) != "":
		res.Problem(key, m, ReasonInvalid, fmt.Sprintf("value %v", f.Value))
		return false
	case f.Time.IsZero():
		res.Problem(key, m, ReasonStale, "the source gave no measurement time")
		return false
	case !Fresh(f.Time, now, maxAge):
		res.Problem(key, m, ReasonStale, fmt.Sprintf("measured at %s, %s before now, more than the %s allowed",
			f.Time.UTC().Format(time.RFC3339), now.Sub(f.Time).Round(time.Second), maxAge))
		return false
	}
	return true
}

// notRunning says why container c of pod cannot have current usage, or "".
func notRunning(pod *corev1.Pod, c string) string {
	if pod.Status.Phase != corev1.PodRunning {
		return fmt.Sprintf("pod phase is %q", pod.Status.Phase)
	}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for _, st := range list {
			if st.Name != c {
				continue
			}
			if st.State.Running == nil {
				return "container is not running"
			}
			return ""
		}
	}
	return "container has no status yet"
}

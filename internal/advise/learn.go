package advise

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/recommend"
)

// Learn feeds new usage and terminations to the workload's recommender
// states. Each container name gets one sample per read: the largest of its
// pods' newer samples, since every pod of the workload is sized alike and
// must hold what its busiest sibling does; sample-to-sample jitter is then
// measured on that one series, not across pods. The pod-level state learns
// the largest pod's total.
//
// A pod in its startup boost teaches memory but not CPU: what it burns while
// starting, on lent CPU, is not what it needs once running.
func (m *Model) Learn(spec *v1alpha1.TailorPolicySpec, pods []Pod, usage metrics.Result, now time.Time) {
	type agg struct {
		at        time.Time
		cpu, mem  float64
		throttled float64
		cpuLimit  float64
	}
	byName := map[string]*agg{}
	type risk struct {
		name                           string
		at                             time.Time
		ws, growth, pressure, memLimit float64
	}
	var risks []risk
	add := func(name string, t time.Time, cpu, mem float64, throttled *float64, cpuLimit float64) {
		wc := m.container(name)
		if !t.After(wc.Fed) {
			return
		}
		a, ok := byName[name]
		if !ok {
			// -1: no CPU reading yet, which AddSample skips.
			a = &agg{cpu: -1}
			byName[name] = a
		}
		if t.After(a.at) {
			a.at = t
		}
		a.cpu, a.mem = max(a.cpu, cpu), max(a.mem, mem)
		if throttled != nil && *throttled >= a.throttled {
			a.throttled, a.cpuLimit = *throttled, cpuLimit
		}
	}
	for _, pv := range pods {
		p, mem := pv.Pod, pv.Memory
		for _, t := range metrics.Terminations(p, mem.LastEvent) {
			wc := m.container(t.Container)
			// The kubelet has been seen reporting a memcg OOM kill as reason
			// Error with exit code 137: with a memory limit, a SIGKILL counts
			// as one, since raising memory is the safe mistake.
			if t.OOMKilled || (t.SIGKILL && t.MemoryLimit > 0) {
				wc.State.RecordOOM(t.FinishedAt, t.MemoryLimit)
			} else {
				wc.State.RecordRestart(t.FinishedAt)
			}
			wc.Changed = now
			if t.FinishedAt.After(mem.LastEvent) {
				mem.LastEvent = t.FinishedAt
			}
		}
		var podCPU, podMem float64
		var podAt time.Time
		// podBoosted: some container's CPU rate reaches into the boost,
		// so the pod's total does too.
		complete, podBoosted := true, false
		names := metrics.Containers(p)
		starting, ends := autoscale.Starting(p, spec.StartupBoost, now)
		for _, c := range names {
			u, ok := usage.Usage[metrics.Key{Namespace: p.Namespace, Pod: p.Name, Container: c}]
			if !ok {
				complete = false
				continue
			}
			// A sample covering any of the boost may arrive after it
			// ended (cAdvisor's figures trail by 10-20s, and a rate spans
			// two of them): where its window began says, for the CPU rate
			// and the throttled fraction each, as a source may have taken
			// them from different samples.
			cpu, throttled := u.CPU, u.Throttled
			if starting || coversBoost(u.Time.Add(-u.Window), ends) {
				cpu, podBoosted = -1, true
			}
			// A throttled fraction says how short the limit it was
			// measured under fell, and is read against the limit the pod
			// has now: one reaching back past tailor's last resize was
			// (partly) measured under another, and would raise the new
			// limit for what the old one lacked.
			if starting || coversBoost(u.ThrottledSince, ends) || !u.ThrottledSince.After(pv.LastResize) {
				throttled = nil
			}
			add(c, u.Time, cpu, u.Memory, throttled, Limited(p, c, corev1.ResourceCPU))
			if u.MemoryGrowth != nil || u.MemoryPressure != nil {
				rk := risk{name: c, at: u.Time, ws: u.Memory, pressure: -1, memLimit: Limited(p, c, corev1.ResourceMemory)}
				if u.MemoryGrowth != nil {
					rk.growth = *u.MemoryGrowth
				}
				if u.MemoryPressure != nil {
					rk.pressure = *u.MemoryPressure
				}
				risks = append(risks, rk)
			}
			podCPU, podMem = podCPU+u.CPU, podMem+u.Memory
			if u.Time.After(podAt) {
				podAt = u.Time
			}
		}
		if p.Spec.Resources != nil && complete && len(names) > 0 {
			if podBoosted {
				podCPU = -1
			}
			add(autoscale.PodLevelName, podAt, podCPU, podMem, nil, 0)
		}
	}
	// Before the samples move each container's fed time on: a risk is
	// recorded with the sample it came with, and a peak counts once
	// however many pods show it.
	for _, rk := range risks {
		if wc := m.Containers[rk.name]; wc != nil && rk.at.After(wc.Fed) {
			wc.State.RecordMemoryRisk(rk.at, rk.ws, rk.growth, rk.pressure, rk.memLimit)
		}
	}
	for name, a := range byName {
		wc := m.Containers[name]
		wc.State.AddSample(recommend.Sample{CPU: a.cpu, Memory: a.mem}, a.at)
		if a.cpuLimit > 0 {
			wc.State.RecordThrottling(a.at, a.throttled, a.cpuLimit)
		}
		wc.Fed, wc.Changed = a.at, now
	}
}

// coversBoost says whether a figure over a span that began at since
// reaches back into a startup boost that ended at ends (zero: no boost
// ended). A span of unknown start is taken to.
func coversBoost(since, ends time.Time) bool {
	return !ends.IsZero() && !since.After(ends)
}

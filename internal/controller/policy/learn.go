package policy

import (
	"github.com/tailorhq/tailor/api/v1alpha1"
	"k8s.io/utils/ptr"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/recommend"
)

// learn feeds new usage and terminations to the workload's recommender
// states. Each container name gets one sample per read: the largest of its
// pods' newer samples, since every pod of the workload is sized alike and
// must hold what its busiest sibling does; sample-to-sample jitter is then
// measured on that one series, not across pods. The pod-level state learns
// the largest pod's total.
//
// A pod in its startup boost teaches memory but not CPU: what it burns while
// starting, on lent CPU, is not what it needs once running.
func (r *Reconciler) learn(state *policyState, spec *v1alpha1.TailorPolicySpec, pods []*corev1.Pod, usage metrics.Result, now time.Time) {
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
		wc := r.workloadContainer(state, name)
		if !t.After(wc.fed) {
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
	for _, p := range pods {
		ps := state.pod(p)
		for _, t := range metrics.Terminations(p, ps.lastEvent) {
			wc := r.workloadContainer(state, t.Container)
			// The kubelet has been seen reporting a memcg OOM kill as reason
			// Error with exit code 137: with a memory limit, a SIGKILL counts
			// as one, since raising memory is the safe mistake.
			if t.OOMKilled || (t.SIGKILL && t.MemoryLimit > 0) {
				wc.state.RecordOOM(t.FinishedAt, t.MemoryLimit)
			} else {
				wc.state.RecordRestart(t.FinishedAt)
			}
			wc.changed = now
			if t.FinishedAt.After(ps.lastEvent) {
				ps.lastEvent = t.FinishedAt
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
			if starting || coversBoost(u.ThrottledSince, ends) || !u.ThrottledSince.After(ps.lastResize) {
				throttled = nil
			}
			add(c, u.Time, cpu, u.Memory, throttled, limited(p, c, corev1.ResourceCPU))
			if u.MemoryGrowth != nil || u.MemoryPressure != nil {
				rk := risk{name: c, at: u.Time, ws: u.Memory, pressure: -1, memLimit: limited(p, c, corev1.ResourceMemory)}
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
		if wc := state.workload[rk.name]; wc != nil && rk.at.After(wc.fed) {
			wc.state.RecordMemoryRisk(rk.at, rk.ws, rk.growth, rk.pressure, rk.memLimit)
		}
	}
	for name, a := range byName {
		wc := state.workload[name]
		wc.state.AddSample(recommend.Sample{CPU: a.cpu, Memory: a.mem}, a.at)
		if a.cpuLimit > 0 {
			wc.state.RecordThrottling(a.at, a.throttled, a.cpuLimit)
		}
		wc.fed, wc.changed = a.at, now
	}
}

// coversBoost says whether a figure over a span that began at since
// reaches back into a startup boost that ended at ends (zero: no boost
// ended). A span of unknown start is taken to.
func coversBoost(since, ends time.Time) bool {
	return !ends.IsZero() && !since.After(ends)
}

func (s *policyState) pod(p *corev1.Pod) *podState {
	ps, ok := s.pods[p.UID]
	if !ok {
		ps = &podState{name: p.Name}
		// Terminations from before tailor saw the pod are history the
		// recommender cannot date against its samples.
		ps.lastEvent = p.CreationTimestamp.Time
		s.pods[p.UID] = ps
	}
	return ps
}

// workloadContainer is the state of one container name, made on first use
// from its configuration (prepare checked every name the pods have).
func (r *Reconciler) workloadContainer(state *policyState, name string) *workloadContainer {
	wc, ok := state.workload[name]
	if ok {
		return wc
	}
	cfg, ok := state.configs[name]
	if !ok {
		cfg = r.Recommender
	}
	rec, err := recommend.New(cfg)
	if err != nil {
		// configure validated every container's configuration.
		panic("recommender configuration for " + name + " became invalid: " + err.Error())
	}
	wc = &workloadContainer{state: rec.NewState()}
	state.workload[name] = wc
	return wc
}

// podAdvice is what the recommender says for one pod.
type podAdvice struct {
	targets    map[string]autoscale.Target
	podTarget  autoscale.Target
	workingSet map[string]resource.Quantity
	// recs are the recommendations against this pod's values, by
	// container name (PodLevelName for the pod's own).
	recs map[string]recommend.Recommendation
	// raiseSince is when the oldest evidence for a raise was taken.
	raiseSince time.Time
}

// recommend asks the workload's state about one pod's current values.
func (r *Reconciler) recommend(state *policyState, spec *v1alpha1.TailorPolicySpec, p *corev1.Pod, usage metrics.Result, now time.Time) podAdvice {
	a := podAdvice{targets: map[string]autoscale.Target{}, workingSet: map[string]resource.Quantity{}, recs: map[string]recommend.Recommendation{}}
	ps := state.pod(p)
	allFresh := true
	consider := func(name string, cur recommend.Resources, fresh bool, at time.Time) *autoscale.Target {
		wc, ok := state.workload[name]
		if !ok {
			return nil
		}
		rec := wc.state.Recommend(cur, ps.lastResize, now)
		a.recs[name] = rec
		t := autoscale.Target{}
		// Without fresh usage only a raise is allowed: an OOM-killed
		// container in a crash loop reports no usage and needs memory most;
		// missing data never lowers anything.
		if rec.CPU.Decision == recommend.Raise || (fresh && rec.CPU.Decision == recommend.Lower) {
			t.CPU = resource.NewMilliQuantity(int64(rec.CPU.Target*1000+0.5), resource.DecimalSI)
		}
		if rec.Memory.Decision == recommend.Raise || (fresh && rec.Memory.Decision == recommend.Lower) {
			t.Memory = resource.NewQuantity(int64(rec.Memory.Target), resource.BinarySI)
		}
		// A value outside the policy's bounds (an edit of minAllowed or
		// maxAllowed, a pod created outside them) moves to the bound even
		// when usage alone would hold it; lowering still needs fresh data.
		bounded := false
		if name != autoscale.PodLevelName {
			if pol, err := spec.PolicyFor(name); err == nil {
				if t.CPU == nil {
					t.CPU = outOfBounds(pol, corev1.ResourceCPU, cur.CPU, fresh)
					bounded = bounded || t.CPU != nil
				}
				if t.Memory == nil {
					t.Memory = outOfBounds(pol, corev1.ResourceMemory, cur.Memory, fresh)
					bounded = bounded || t.Memory != nil
				}
			}
		}
		if rec.CPU.Decision == recommend.Raise || rec.Memory.Decision == recommend.Raise || bounded {
			since := now
			if fresh && at.Before(now) {
				since = at
			}
			if oom := wc.state.LastOOM(); !oom.IsZero() && oom.Before(since) && oom.After(ps.lastResize) {
				since = oom
			}
			if a.raiseSince.IsZero() || since.Before(a.raiseSince) {
				a.raiseSince = since
			}
		}
		if t.CPU == nil && t.Memory == nil {
			return nil
		}
		return &t
	}
	for _, c := range metrics.Containers(p) {
		u, fresh := usage.Usage[metrics.Key{Namespace: p.Namespace, Pod: p.Name, Container: c}]
		if fresh {
			a.workingSet[c] = *resource.NewQuantity(int64(u.Memory), resource.BinarySI)
		} else {
			allFresh = false
		}
		cur := recommend.Resources{CPU: requested(p, c, corev1.ResourceCPU), Memory: requested(p, c, corev1.ResourceMemory)}
		if t := consider(c, cur, fresh, u.Time); t != nil {
			a.targets[c] = *t
		}
	}
	if pr := p.Spec.Resources; pr != nil {
		cur := recommend.Resources{CPU: quantityOf(pr.Requests, corev1.ResourceCPU), Memory: quantityOf(pr.Requests, corev1.ResourceMemory)}
		if t := consider(autoscale.PodLevelName, cur, allFresh, now); t != nil {
			a.podTarget = *t
		}
	}
	switch {
	case a.raiseSince.IsZero():
		ps.raiseSince = time.Time{}
	case ps.raiseSince.IsZero() || a.raiseSince.Before(ps.raiseSince):
		ps.raiseSince = a.raiseSince
	}
	return a
}

// requested is the container's request in cores or bytes (0 when unset): the
// value the recommendation sizes, so the one the recommender compares its
// target with.
func requested(p *corev1.Pod, container string, r corev1.ResourceName) float64 {
	c := findContainer(p, container)
	if c == nil {
		return 0
	}
	return quantityOf(c.Resources.Requests, r)
}

// outOfBounds is the bound of pol that cur (cores or bytes, the request)
// breaks, nil when it is within them or not requested at all. A value above
// maxAllowed moves down only on fresh usage, as any lowering does.
func outOfBounds(pol v1alpha1.ContainerPolicy, r corev1.ResourceName, cur float64, fresh bool) *resource.Quantity {
	if cur <= 0 {
		return nil
	}
	if lo, ok := pol.MinAllowed[r]; ok && cur < lo.AsApproximateFloat64() {
		return ptr.To(lo.DeepCopy())
	}
	if hi, ok := pol.MaxAllowed[r]; ok && fresh && cur > hi.AsApproximateFloat64() {
		return ptr.To(hi.DeepCopy())
	}
	return nil
}

// limited is the container's limit in cores or bytes (0 when unset): the
// value CFS throttling is measured against.
func limited(p *corev1.Pod, container string, r corev1.ResourceName) float64 {
	c := findContainer(p, container)
	if c == nil {
		return 0
	}
	return quantityOf(c.Resources.Limits, r)
}

func quantityOf(l corev1.ResourceList, r corev1.ResourceName) float64 {
	q, ok := l[r]
	if !ok {
		return 0
	}
	if r == corev1.ResourceCPU {
		return float64(q.MilliValue()) / 1000
	}
	return float64(q.Value())
}

// forgetGone drops the pods that are no longer selected, except an evicted
// pod whose replacement may still come, and the containers nothing has been
// learnt of for longer than the recommender remembers.
func (s *policyState) forgetGone(pods []*corev1.Pod, now time.Time) {
	live := map[types.UID]bool{}
	for _, p := range pods {
		live[p.UID] = true
	}
	for uid, ps := range s.pods {
		keep := ps.result == stateEvicted && now.Sub(ps.lastResize) < RecreationTTL
		if !live[uid] && !keep {
			delete(s.pods, uid)
		}
	}
	// A container name no pod has fed for longer than both its windows
	// holds no peak any more: forgetting it loses nothing, and a container
	// removed from the workload does not stay in memory and checkpoint.
	for name, wc := range s.workload {
		cfg := s.configs[name]
		last := wc.fed
		if wc.changed.After(last) {
			last = wc.changed
		}
		if !last.IsZero() && now.Sub(last) > max(cfg.CPUWindow, cfg.MemoryWindow) {
			delete(s.workload, name)
			delete(s.configs, name)
			recommendationGauge.DeletePartialMatch(prometheus.Labels{"namespace": s.key.Namespace, "policy": s.key.Name, "container": name})
		}
	}
}

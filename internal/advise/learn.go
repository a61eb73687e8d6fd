package advise

import (
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/boost"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/recommend"
)

// NodeLead is how far one node's figures may lead every other node's in a
// read and still be learnt by the workload: a node teaches the workload at
// most NodeLead times the largest figure any other node of the workload
// shows in the same read. The figures are a container's CPU (or the peak a
// throttled share records) and memory (or the peak an OOM kill or a memory
// risk records), judged per container name, and the pods' totals for the
// pod-level resources.
//
// What a node reports is its own pods' only: its agent and its kubelet can
// write anything up to what a container can physically use (metrics.Screen
// holds the rest), and the workload's state sizes every replica on every
// node and every new pod. So pods on other nodes are sized as if their
// busiest sibling elsewhere used at most twice what it does, and, since the
// bound follows what the other nodes measure and not what was learnt, a lie
// cannot ratchet (a raise, a higher limit, a higher lie). Replicas behind
// one Service or queue see alike loads: twice the busiest other node in one
// read is a hot key, a leak, or a lie, and in each case the pod's own. Such
// a pod learns in a state of its own (PodMemory.Own) that sizes it and it
// alone; a workload whose pods all run on one node is not bounded (that
// node moves only its own pods).
const NodeLead = 2.0

// Learn feeds new usage and terminations to the workload's recommender
// states. Each container name gets one sample per read: the largest of its
// pods' newer samples, since every pod of the workload is sized alike and
// must hold what its busiest sibling does; sample-to-sample jitter is then
// measured on that one series, not across pods. The pod-level state learns
// the largest pod's total. A node's figures count for the workload only up
// to NodeLead times the other nodes'; a pod whose figures lead by more also
// feeds a state of its own, all its figures, for as long as it runs.
//
// A pod in its startup boost teaches memory but not CPU: what it burns while
// starting, on lent CPU, is not what it needs once running.
func (m *Model) Learn(spec *v1alpha1.TailorPolicySpec, pods []Pod, usage metrics.Result, now time.Time) {
	var obs []*observation
	for _, pv := range pods {
		obs = append(obs, m.observe(spec, pv, usage, now)...)
	}
	lead := m.lead
	if lead == 0 {
		lead = NodeLead
	}
	cpuLead, memLead := map[string]*leaders{}, map[string]*leaders{}
	for _, o := range obs {
		st := m.container(o.name).State
		if cpu, ok := o.cpuFigure(st); ok {
			leadersOf(cpuLead, o.name).add(o.node, cpu)
		}
		if mem, ok := o.memFigure(st); ok {
			leadersOf(memLead, o.name).add(o.node, mem)
		}
	}
	cpuCeiling := func(o *observation) float64 { return leadersOf(cpuLead, o.name).ceiling(o.node, lead) }
	memCeiling := func(o *observation) float64 { return leadersOf(memLead, o.name).ceiling(o.node, lead) }

	// Terminations first, as they come before the samples that follow
	// them; a kill above the bound is only a restart to the workload.
	for _, o := range obs {
		wc := m.Containers[o.name]
		for _, k := range o.kills {
			if k.oom && wc.State.OOMPeak(k.limit) <= memCeiling(o) {
				wc.State.RecordOOM(k.at, k.limit)
			} else {
				wc.State.RecordRestart(k.at)
				o.led = o.led || k.oom
			}
			wc.Changed = now
		}
	}
	// Before the samples move each container's fed time on: a risk is
	// recorded with the sample it came with, and a peak counts once
	// however many pods show it.
	for _, o := range obs {
		wc := m.Containers[o.name]
		if o.risk == nil || !o.at.After(wc.Fed) {
			continue
		}
		r := o.risk
		if wc.State.MemoryRiskPeak(o.mem, r.growth, r.pressure, r.memLimit) > memCeiling(o) {
			o.led = true
			continue
		}
		wc.State.RecordMemoryRisk(o.at, o.mem, r.growth, r.pressure, r.memLimit)
	}
	type agg struct {
		at        time.Time
		cpu, mem  float64
		throttled float64
		cpuLimit  float64
	}
	byName := map[string]*agg{}
	for _, o := range obs {
		wc := m.Containers[o.name]
		cpuMax, memMax := cpuCeiling(o), memCeiling(o)
		o.led = o.led || o.cpu > cpuMax || o.mem > memMax
		throttled := o.throttled
		if throttled != nil && wc.State.ThrottlePeak(*throttled, o.cpuLimit) > cpuMax {
			o.led, throttled = true, nil
		}
		if !o.at.After(wc.Fed) {
			continue
		}
		a, ok := byName[o.name]
		if !ok {
			// -1: no CPU reading yet, which AddSample skips.
			a = &agg{cpu: -1}
			byName[o.name] = a
		}
		if o.at.After(a.at) {
			a.at = o.at
		}
		a.cpu, a.mem = max(a.cpu, min(o.cpu, cpuMax)), max(a.mem, min(o.mem, memMax))
		if throttled != nil && *throttled >= a.throttled {
			a.throttled, a.cpuLimit = *throttled, o.cpuLimit
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
	for _, o := range obs {
		m.learnOwn(o, now)
	}
}

// learnOwn feeds all of o's figures to its pod's own state for o's name,
// made when o leads the other nodes beyond NodeLead.
func (m *Model) learnOwn(o *observation, now time.Time) {
	mem := o.pod.Memory
	own := mem.Own[o.name]
	if own == nil && !o.led {
		return
	}
	if own == nil {
		if mem.Own == nil {
			mem.Own = map[string]*Container{}
		}
		own = m.newContainer(o.name)
		mem.Own[o.name] = own
	} else if cfg := m.configOf(o.name); own.State.Config() != cfg {
		// The policy's settings changed: what the pod learnt carries over.
		if st, err := carryOver(own.State, cfg); err == nil {
			own.State = st
		}
	}
	for _, k := range o.kills {
		if k.oom {
			own.State.RecordOOM(k.at, k.limit)
		} else {
			own.State.RecordRestart(k.at)
		}
		own.Changed = now
	}
	if !o.at.After(own.Fed) {
		return
	}
	if r := o.risk; r != nil {
		own.State.RecordMemoryRisk(o.at, o.mem, r.growth, r.pressure, r.memLimit)
	}
	own.State.AddSample(recommend.Sample{CPU: o.cpu, Memory: o.mem}, o.at)
	if o.throttled != nil && o.cpuLimit > 0 {
		own.State.RecordThrottling(o.at, *o.throttled, o.cpuLimit)
	}
	own.Fed, own.Changed = o.at, now
}

// observation is what one read says of one container name of one pod: its
// figures, and its terminations since the last read.
type observation struct {
	pod Pod
	// name is the key (Key) of the states it teaches: the container name
	// on the pod's class of node.
	name string
	node string
	at   time.Time
	// cpu is -1 when there is no CPU figure to learn (none read, or the
	// startup boost's), mem 0 when there is no memory figure.
	cpu, mem  float64
	throttled *float64
	cpuLimit  float64
	risk      *risk
	kills     []kill
	// led: some figure of o leads the other nodes' beyond NodeLead.
	led bool
}

type risk struct{ growth, pressure, memLimit float64 }

type kill struct {
	at    time.Time
	oom   bool
	limit float64
}

// cpuFigure is the most CPU o shows: its rate, or the peak its throttled
// share records; false when it shows none.
func (o *observation) cpuFigure(st *recommend.State) (float64, bool) {
	v := o.cpu
	if o.throttled != nil {
		v = max(v, st.ThrottlePeak(*o.throttled, o.cpuLimit))
	}
	return v, v >= 0
}

// memFigure is the most memory o shows: its working set, or the peak a
// memory risk or an OOM kill records; false when it shows none.
func (o *observation) memFigure(st *recommend.State) (float64, bool) {
	v := o.mem
	if r := o.risk; r != nil {
		v = max(v, st.MemoryRiskPeak(o.mem, r.growth, r.pressure, r.memLimit))
	}
	for _, k := range o.kills {
		if k.oom {
			v = max(v, st.OOMPeak(k.limit))
		}
	}
	return v, v > 0
}

// observe is what a read says of one pod, one observation per container
// name with news (and the pod-level name for the pods' totals). It moves
// the pod's memory past the terminations it returns.
func (m *Model) observe(spec *v1alpha1.TailorPolicySpec, pv Pod, usage metrics.Result, now time.Time) []*observation {
	p, mem := pv.Pod, pv.Memory
	byName := map[string]*observation{}
	var out []*observation
	of := func(name string) *observation {
		o, ok := byName[name]
		if !ok {
			key := Key(name, pv.Class)
			m.container(key)
			o = &observation{pod: pv, name: key, node: p.Spec.NodeName, cpu: -1}
			byName[name] = o
			out = append(out, o)
		}
		return o
	}
	for _, t := range metrics.Terminations(p, mem.LastEvent) {
		// The kubelet has been seen reporting a memcg OOM kill as reason
		// Error with exit code 137: with a memory limit, a SIGKILL counts
		// as one, since raising memory is the safe mistake.
		o := of(t.Container)
		o.kills = append(o.kills, kill{at: t.FinishedAt, oom: t.OOMKilled || (t.SIGKILL && t.MemoryLimit > 0), limit: t.MemoryLimit})
		if t.FinishedAt.After(mem.LastEvent) {
			mem.LastEvent = t.FinishedAt
		}
	}
	var podCPU, podMem float64
	var podAt time.Time
	// podBoosted: some container's CPU rate reaches into the boost,
	// so the pod's total does too.
	complete, podBoosted := true, false
	names := podcontainers.Names(p)
	starting, ends := boost.Starting(p, spec.StartupBoost, now)
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
		o := of(c)
		o.at, o.cpu, o.mem, o.throttled, o.cpuLimit = u.Time, cpu, u.Memory, throttled, Limited(p, c, corev1.ResourceCPU)
		if u.MemoryGrowth != nil || u.MemoryPressure != nil {
			o.risk = &risk{pressure: -1, memLimit: Limited(p, c, corev1.ResourceMemory)}
			if u.MemoryGrowth != nil {
				o.risk.growth = *u.MemoryGrowth
			}
			if u.MemoryPressure != nil {
				o.risk.pressure = *u.MemoryPressure
			}
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
		o := of(podcontainers.PodLevelName)
		o.at, o.cpu, o.mem = podAt, podCPU, podMem
	}
	return out
}

// leaders are, for one figure of one container name, the node showing the
// most and the two largest figures of different nodes.
type leaders struct {
	top           string
	first, second float64
	nodes         int
}

func leadersOf(by map[string]*leaders, name string) *leaders {
	l, ok := by[name]
	if !ok {
		l = &leaders{}
		by[name] = l
	}
	return l
}

// add counts v, a figure of a pod on node. A node's figure is the largest
// of its pods'.
func (l *leaders) add(node string, v float64) {
	switch {
	case l.nodes > 0 && node == l.top:
		l.first = max(l.first, v)
	case l.nodes == 0:
		l.top, l.first, l.nodes = node, v, 1
	default:
		// A node already counted as second may show more now: the count
		// of nodes only matters as one or more than one.
		l.nodes = 2
		if v > l.first {
			l.top, l.first, l.second = node, v, l.first
		} else {
			l.second = max(l.second, v)
		}
	}
}

// ceiling is the most a figure of a pod on node teaches the workload: lead
// times the largest figure of any other node, unbounded when no other node
// shows one.
func (l *leaders) ceiling(node string, lead float64) float64 {
	switch {
	case l.nodes < 2 || math.IsInf(lead, 1):
		return math.Inf(1)
	case node == l.top:
		return lead * l.second
	default:
		return lead * l.first
	}
}

// coversBoost says whether a figure over a span that began at since
// reaches back into a startup boost that ended at ends (zero: no boost
// ended). A span of unknown start is taken to.
func coversBoost(since, ends time.Time) bool {
	return !ends.IsZero() && !since.After(ends)
}

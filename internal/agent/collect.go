package agent

import (
	"fmt"
	"sort"
	"time"

	"github.com/tailorhq/tailor/internal/agent/cgroup"
	"github.com/tailorhq/tailor/internal/agent/report"
)

// Thresholds say when a container needs its policy synced now.
type Thresholds struct {
	// Throttled is the share of CFS periods throttled over the last
	// sample interval at which CPU is urgent.
	Throttled float64
	// CPUPressure is the PSI share of time stalled on CPU (cgroup v2) at
	// which CPU is urgent.
	CPUPressure float64
	// MemoryMargin is the share of its limit the working set may come
	// within before memory is at risk.
	MemoryMargin float64
	// MemoryLead is how soon the working set, growing as it has lately
	// (growthOf), may reach its limit before memory is at risk: the
	// sample interval, the push, a sync and the resize must fit in it.
	MemoryLead time.Duration
	// MemoryPressure is the PSI share of time stalled on memory (cgroup
	// v2) at which memory is at risk.
	MemoryPressure float64
	// Cooldown is how long a container that woke the manager waits before
	// it may wake it again: one wake-up is enough for a sync to run, and a
	// container that stays hot must not wake it every second. A memory
	// risk the manager has not been told of yet does not wait for it
	// (Collector.memoryNews).
	Cooldown time.Duration
}

// DefaultThresholds are the agent's defaults; see each field.
func DefaultThresholds() Thresholds {
	return Thresholds{
		// The recommender counts 5% as throttled; a whole second above a
		// quarter is a step, not noise.
		Throttled:   0.25,
		CPUPressure: 0.25,
		// The kubelet's own memory margin is about the same: at 90% the
		// next allocation burst may be the OOM kill.
		MemoryMargin: 0.1,
		// 1s sample + push + sync + resize + the kubelet applying it take
		// 2-3s on an idle node (make bench-e2e), and took 8s in a CI run
		// with no idle core; the recommender counts a course toward the
		// limit within 10s as a risk (recommend.Config.MemoryLead), and
		// the manager should hear of it as soon as it would act on it.
		MemoryLead:     10 * time.Second,
		MemoryPressure: 0.1,
		Cooldown:       3 * time.Second,
	}
}

// growthSpan is how many sample intervals the memory growth is measured
// over, besides the newest alone (growthOf): one is noisy (a ramp's pause
// reads as its end), many keep a ramp that ended for long.
const growthSpan = 3

type point struct {
	t time.Time
	s cgroup.Sample
}

// track is what the Collector keeps of one container.
type track struct {
	podUID string
	// last is the newest sample, prev the one before it; reported is the
	// newest sample when the last report was made (zero: none made).
	last, prev, reported point
	// ws holds the working set's last samples, newest last; growth is
	// growthOf(ws).
	ws     []point
	growth float64
	// wokeAt is when the container last made a report urgent.
	wokeAt time.Time
	// streak counts the wake-ups since the container was last calm; each
	// doubles the cooldown, so one held at its bounds (throttled at its
	// policy's maxAllowed) stops waking the manager for nothing.
	streak int
	// toldLimit is the memory limit at the last wake-up, and toldGrowth
	// the fastest growth the wake-ups have reported under it: what the
	// manager was told of the container's memory.
	toldLimit  uint64
	toldGrowth float64
	urgent     string
	atRisk     bool
}

// Collector turns successive cgroup samples into the figures of a report.
// It is not safe for concurrent use.
type Collector struct {
	th     Thresholds
	tracks map[string]*track // by container ID
	// pending says a container became urgent since the last report.
	pending bool
}

// NewCollector returns an empty Collector.
func NewCollector(th Thresholds) *Collector {
	return &Collector{th: th, tracks: map[string]*track{}}
}

// Len is how many containers the Collector tracks.
func (c *Collector) Len() int { return len(c.tracks) }

// Observe records one sample of every container read at now (those not in
// samples are gone, and forgotten) and reports whether any became urgent:
// the caller pushes a report at once when so.
func (c *Collector) Observe(now time.Time, containers []cgroup.Container, samples []cgroup.Sample) bool {
	seen := make(map[string]bool, len(containers))
	for i, ct := range containers {
		seen[ct.ID] = true
		tr := c.tracks[ct.ID]
		if tr == nil {
			tr = &track{podUID: ct.PodUID}
			c.tracks[ct.ID] = tr
		}
		p := point{t: now, s: samples[i]}
		if !tr.last.t.IsZero() && p.s.CPUUsage < tr.last.s.CPUUsage {
			// A counter went back: not the cgroup it was. Start over.
			*tr = track{podUID: ct.PodUID}
		}
		tr.prev, tr.last = tr.last, p
		tr.ws = append(tr.ws, p)
		if len(tr.ws) > growthSpan+1 {
			tr.ws = tr.ws[1:]
		}
		tr.growth = growthOf(tr.ws)
		why, atRisk := c.judge(tr)
		tr.atRisk = atRisk
		switch {
		case why == "":
			tr.streak = 0
		case tr.wokeAt.IsZero() || now.Sub(tr.wokeAt) >= c.cooldown(tr.streak) || atRisk && c.memoryNews(tr, now):
			tr.urgent, tr.wokeAt = why, now
			tr.streak++
			c.pending = true
			if limit := p.s.MemoryLimit; limit != tr.toldLimit {
				tr.toldLimit, tr.toldGrowth = limit, tr.growth
			} else {
				tr.toldGrowth = max(tr.toldGrowth, tr.growth)
			}
		}
	}
	for id := range c.tracks {
		if !seen[id] {
			delete(c.tracks, id)
		}
	}
	return c.pending
}

// maxBackoff bounds the cooldown's doubling: 3s doubled 7 times is about
// 6 minutes, so a container held at its bounds wakes the manager a few
// times an hour, not every few seconds.
const maxBackoff = 7

func (c *Collector) cooldown(streak int) time.Duration {
	return c.th.Cooldown << min(max(streak-1, 0), maxBackoff)
}

// memoryNews says whether tr, its memory at risk while its cooldown runs,
// wakes the manager now anyway. It does when both hold:
//
//   - its working set, growing as it does, reaches its limit before the
//     cooldown ends and MemoryLead after: waiting the cooldown out would
//     leave a raise less time than it takes;
//   - the course is one the manager has not been told of: the limit is not
//     the one of the last wake-up (a raise landed and falls short of the
//     ramp, or the limit was lowered), or the growth is over twice the
//     fastest the wake-ups under this limit reported (the manager sized
//     for a course less than half as steep, or the wake-ups were for CPU
//     while memory was flat, and their streak ran the cooldown up).
//
// An OOM kill is never a wake-up for nothing; a container held at a limit
// that does not move (its policy's maxAllowed, no room on the node) and
// sitting near it is one, every second it would otherwise ask: the
// manager was told at the last wake-up and did not raise. So each wake-up
// let through takes a new limit or the growth doubling, and counts in the
// streak like any other: under a limit that does not move the cooldown's
// schedule holds but for those doublings.
func (c *Collector) memoryNews(tr *track, now time.Time) bool {
	s := tr.last.s
	if s.MemoryLimit == 0 || tr.growth <= 0 {
		// Stalls alone (PSI) are no course to a kill: they wait.
		return false
	}
	left := max(float64(s.MemoryLimit)-float64(s.WorkingSet), 0) / tr.growth
	wait := c.cooldown(tr.streak) - now.Sub(tr.wokeAt)
	if left >= (wait + c.th.MemoryLead).Seconds() {
		return false
	}
	return s.MemoryLimit != tr.toldLimit || tr.growth > 2*tr.toldGrowth
}

// judge says why tr needs a sync now ("" when it does not) and whether its
// memory is at risk.
func (c *Collector) judge(tr *track) (string, bool) {
	s := tr.last.s
	var mem string
	if s.MemoryLimit > 0 {
		limit, ws := float64(s.MemoryLimit), float64(s.WorkingSet)
		growth := tr.growth
		switch {
		case growth > 0 && ws >= (1-c.th.MemoryMargin)*limit:
			// Only while it grows: a working set that sits near its limit
			// is the workload's size, and waking for it every cooldown
			// would only cost syncs.
			mem = fmt.Sprintf("memory: working set %s, growing, is within %.0f%% of its %s limit", mib(ws), c.th.MemoryMargin*100, mib(limit))
		case growth > 0 && (limit-ws)/growth <= c.th.MemoryLead.Seconds():
			mem = fmt.Sprintf("memory: working set %s growing %s/s reaches its %s limit in %.1fs", mib(ws), mib(growth), mib(limit), (limit-ws)/growth)
		}
	}
	if p := s.MemoryPressure; p != nil && p.SomeAvg10 >= c.th.MemoryPressure && mem == "" {
		mem = fmt.Sprintf("memory: tasks stalled on memory %.0f%% of the last 10s", p.SomeAvg10*100)
	}
	if mem != "" {
		return mem, true
	}
	if th, ok := throttledShare(tr.prev, tr.last); ok && th >= c.th.Throttled && !tr.prev.t.IsZero() {
		return fmt.Sprintf("cpu: throttled in %.0f%% of CFS periods over the last %s", th*100, tr.last.t.Sub(tr.prev.t).Round(100*time.Millisecond)), false
	}
	if p := s.CPUPressure; p != nil && p.SomeAvg10 >= c.th.CPUPressure {
		return fmt.Sprintf("cpu: tasks stalled on CPU %.0f%% of the last 10s", p.SomeAvg10*100), false
	}
	return "", false
}

// Report returns the figures of every container since the last report,
// and starts the next report's window.
func (c *Collector) Report() report.Report {
	r := report.Report{Urgent: c.pending, Containers: make([]report.Container, 0, len(c.tracks))}
	for id, tr := range c.tracks {
		s := tr.last.s
		rc := report.Container{
			PodUID: tr.podUID, ID: id, Time: tr.last.t,
			WorkingSet: s.WorkingSet, MemoryLimit: s.MemoryLimit, MemoryGrowth: tr.growth,
			OOMKills: s.OOMKills, Urgent: tr.urgent, MemoryAtRisk: tr.atRisk,
		}
		from := tr.reported
		if from.t.IsZero() {
			// The first report covers everything seen since the first sample.
			from = tr.ws[0]
		}
		if dt := tr.last.t.Sub(from.t); dt > 0 {
			rc.Window = report.Seconds(dt.Seconds())
			rc.CPU = (s.CPUUsage - from.s.CPUUsage).Seconds() / dt.Seconds()
			if th, ok := throttledShare(from, tr.last); ok {
				rc.Throttled = &th
			}
		}
		if p := s.CPUPressure; p != nil {
			v := p.SomeAvg10
			rc.CPUPressure = &v
		}
		if p := s.MemoryPressure; p != nil {
			v := p.SomeAvg10
			rc.MemoryPressure = &v
		}
		r.Containers = append(r.Containers, rc)
		tr.reported, tr.urgent = tr.last, ""
	}
	sort.Slice(r.Containers, func(i, j int) bool { return r.Containers[i].ID < r.Containers[j].ID })
	c.pending = false
	return r
}

// Unsent puts back the urgency of r's containers when a manager did not
// take r: the wake-up the failed push carried is not spent, so the next
// sample pushes again rather than waiting out the cooldown. A container
// that turned urgent again since keeps its newer reason.
func (c *Collector) Unsent(r *report.Report) {
	for _, rc := range r.Containers {
		if tr := c.tracks[rc.ID]; tr != nil && rc.Urgent != "" && tr.urgent == "" {
			tr.urgent = rc.Urgent
			c.pending = true
		}
	}
}

// throttledShare is the share of CFS periods throttled between two samples;
// false when no period ran (no CPU limit, or an idle container).
func throttledShare(from, to point) (float64, bool) {
	if from.t.IsZero() || to.s.Periods <= from.s.Periods || to.s.Throttled < from.s.Throttled {
		return 0, false
	}
	return float64(to.s.Throttled-from.s.Throttled) / float64(to.s.Periods-from.s.Periods), true
}

// growthOf is how fast the working set grows, in bytes a second: 0 when
// it is no higher than growthSpan intervals ago, else the steeper of its
// growth over the samples kept (the span) and over the newest interval.
//
//   - The newest interval shows a ramp that has just begun. Over the span,
//     the flat seconds before it dilute it: a 50Mi/s ramp after two flat
//     seconds read 17Mi/s, the manager raised for a third of it, and the
//     kernel killed the container short of the raise.
//   - The span keeps a ramp that paused for a second (a collection, an
//     allocation landing just after a sample) from reading as stopped,
//     and says whether the working set grows at all: one that jitters
//     near its limit rises in half its seconds, and taking each rise for
//     growth woke the manager a fifth more often than the span's net
//     change does (a working set jittering by 4Mi under a fixed 256Mi
//     limit, in a simulated hour: 1,005 wake-ups against 830).
//
// An allocation freed again inflates neither: once freed, the newest
// interval falls and the span holds only what was not freed. A burst seen
// before it is freed is, for all one sample tells, a ramp's first second,
// and counts as one: a raise for it is lowered later, a ramp missed is an
// OOM kill. The steepest interval in the span would instead keep a burst
// as growth for growthSpan-1 seconds after it was freed, and the manager
// would raise for memory that is gone.
func growthOf(ws []point) float64 {
	if len(ws) < 2 {
		return 0
	}
	first, prev, last := ws[0], ws[len(ws)-2], ws[len(ws)-1]
	if last.s.WorkingSet <= first.s.WorkingSet {
		return 0
	}
	return max(slope(first, last), slope(prev, last))
}

// slope is how fast the working set grew from a to b, in bytes a second
// (negative when it fell; 0 over no time).
func slope(a, b point) float64 {
	dt := b.t.Sub(a.t).Seconds()
	if dt <= 0 {
		return 0
	}
	return (float64(b.s.WorkingSet) - float64(a.s.WorkingSet)) / dt
}

func mib(b float64) string { return fmt.Sprintf("%.0fMi", b/(1<<20)) }

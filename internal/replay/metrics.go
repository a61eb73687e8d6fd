package replay

import (
	"math"
	"slices"
	"time"
)

// Report is the outcome of one replay.
type Report struct {
	Warmup time.Duration
	// Policies holds the fleet figures, in the order the policies ran.
	Policies []PolicyResult
	// Series holds per-series accounting, one entry per usable series.
	Series []SeriesResult
	// Skipped names series too short to judge.
	Skipped []string
	// Shapes are the memory shapes scored (Options.Shapes).
	Shapes []Shape
	// Split divides the first half of the trace from the second.
	Split time.Time
	// NodeMemory are the node sizes packed (Options.NodeMemory), each
	// Packings times.
	NodeMemory []float64
	Packings   int
	// nodes holds each policy's nodes in use under each shape on each
	// node size, by half.
	nodes [][][][2]nodeTally
}

// PolicyResult is one policy's fleet figures.
type PolicyResult struct {
	Policy string  `json:"policy"`
	Series int     `json:"series"`
	CPU    Figures `json:"cpu"`
	Memory Figures `json:"memory"`
	// Shapes holds the memory scored as Kubernetes charges it, one entry
	// per shape replayed (Options.Shapes), over the whole trace.
	Shapes []MemoryFigures `json:"shapes,omitempty"`
}

// MemoryFigures summarize memory under one shape: requests are what the
// fleet pays, a sample over the limit is an OOM kill, a node whose summed
// usage passes its memory evicts.
type MemoryFigures struct {
	Shape string `json:"shape"`
	// RequestsOverUsed is the sum over series of mean request divided by
	// the sum over series of mean used: what the scheduler reserves for
	// each unit used.
	RequestsOverUsed float64 `json:"requestsOverUsed"`
	// LimitsOverUsed is the same for limits (+Inf with a series that has
	// none; JSON 0).
	LimitsOverUsed float64 `json:"limitsOverUsed"`
	// OverRequestPct is the share of samples, pooled, above the request:
	// not a kill unless the limit is the request, but what fills a node.
	OverRequestPct float64 `json:"overRequestPct"`
	// OOMKills counts samples above the limit; OOMKillPct is their share
	// of all samples, pooled, and OOMKillPctP90 the 90th percentile across
	// series of each series' share.
	OOMKills      int     `json:"oomKills"`
	OOMKillPct    float64 `json:"oomKillPct"`
	OOMKillPctP90 float64 `json:"oomKillPctP90"`
	// Evictions counts the pods the kubelet evicted from nodes whose
	// summed usage passed their memory (0 when not packed), on the node
	// size the figures are for: the mean over the packings
	// (Options.Packings).
	Evictions float64 `json:"evictions"`
	// Nodes is the mean number of nodes in use (0 when not packed, or for
	// a subset of the series, which shares its nodes with the rest).
	Nodes float64 `json:"nodes"`
	// ChangesPerDay counts changes of the request or the limit per
	// series-day.
	ChangesPerDay float64 `json:"changesPerDay"`
}

// Figures summarize one resource across the fleet.
type Figures struct {
	// ProvisionedOverUsed is the sum over series of mean provisioned
	// divided by the sum over series of mean used: what the fleet pays for
	// each unit it uses.
	ProvisionedOverUsed float64 `json:"provisionedOverUsed"`
	// OverPct is the percentage of all samples, pooled across series, whose
	// usage exceeded what was provisioned.
	OverPct float64 `json:"overPct"`
	// OverPctP90 is the 90th percentile across series of each series'
	// over-percentage: how bad it is for the unlucky workloads.
	OverPctP90 float64 `json:"overPctP90"`
	// ChangesPerDay is the number of changes of the provisioned value per
	// series-day: how often the policy would resize.
	ChangesPerDay float64 `json:"changesPerDay"`
}

// SeriesResult is the accounting of one series under every policy.
type SeriesResult struct {
	Name string
	// Policies is indexed like Report.Policies.
	Policies []SeriesPolicy
	// Trajectory is kept only for series chosen for charts.
	Trajectory *Trajectory
}

// SeriesPolicy is one policy's accounting on one series.
type SeriesPolicy struct {
	CPU Tally
	// Memory is scored as one value: the request, under the first shape.
	Memory Tally
	// Shapes holds memory under each shape, indexed like Options.Shapes
	// (one entry, limit = request, when there were none).
	Shapes []ShapeTally
}

// ShapeTally is one series' memory under one shape, before and after
// Options.Split.
type ShapeTally struct {
	Halves [2]MemoryTally
	// Evictions counts the node-pressure evictions the packings charged
	// to this series (the pods the kubelet picked), summed over the
	// packings, by node size (Options.NodeMemory), then half; empty when
	// not packed.
	Evictions [][2]int
}

// Total is both halves together.
func (t ShapeTally) Total() MemoryTally {
	a, b := t.Halves[0], t.Halves[1]
	return MemoryTally{
		Samples: a.Samples + b.Samples, SumRequest: a.SumRequest + b.SumRequest, SumLimit: a.SumLimit + b.SumLimit,
		SumUsed: a.SumUsed + b.SumUsed, OverRequest: a.OverRequest + b.OverRequest, Kills: a.Kills + b.Kills,
		Changes: a.Changes + b.Changes, Days: a.Days + b.Days,
	}
}

// MemoryTally accumulates one series' memory under one shape after the
// warm-up.
type MemoryTally struct {
	Samples     int
	SumRequest  float64
	SumLimit    float64
	SumUsed     float64
	OverRequest int
	// Kills counts samples above the limit.
	Kills   int
	Changes int
	Days    float64
}

func (t *MemoryTally) add(used, request, limit float64) {
	t.Samples++
	t.SumUsed += used
	t.SumRequest += request
	t.SumLimit += limit
	if used > request {
		t.OverRequest++
	}
	if used > limit {
		t.Kills++
	}
}

// KillPct is the share of this series' samples that were OOM kills, in
// percent.
func (t MemoryTally) KillPct() float64 {
	if t.Samples == 0 {
		return 0
	}
	return 100 * float64(t.Kills) / float64(t.Samples)
}

// Tally accumulates one resource of one series after the warm-up.
type Tally struct {
	Samples        int
	Over           int
	SumProvisioned float64
	SumUsed        float64
	Changes        int
	Days           float64
}

func (t *Tally) add(used, provisioned float64) {
	t.Samples++
	t.SumUsed += used
	t.SumProvisioned += provisioned
	if used > provisioned {
		t.Over++
	}
}

// OverPct is the share of this series' samples that were over, in percent.
func (t Tally) OverPct() float64 {
	if t.Samples == 0 {
		return 0
	}
	return 100 * float64(t.Over) / float64(t.Samples)
}

// Ratio is mean provisioned over mean used for this series.
func (t Tally) Ratio() float64 {
	if t.SumUsed == 0 {
		return math.Inf(1)
	}
	return t.SumProvisioned / t.SumUsed
}

// Trajectory is usage and each policy's provisioned value over time.
type Trajectory struct {
	Samples []Sample
	// Provisioned is indexed like Report.Policies, then like Samples.
	Provisioned [][]Resources
}

func summarize(name string, rep *Report, pi int) PolicyResult {
	cpu := make([]Tally, 0, len(rep.Series))
	mem := make([]Tally, 0, len(rep.Series))
	for _, s := range rep.Series {
		cpu = append(cpu, s.Policies[pi].CPU)
		mem = append(mem, s.Policies[pi].Memory)
	}
	res := PolicyResult{Policy: name, Series: len(rep.Series), CPU: figures(cpu), Memory: figures(mem)}
	for si := range rep.Shapes {
		res.Shapes = append(res.Shapes, rep.Memory(pi, si, Subset{}))
	}
	return res
}

// Subset picks the part of a replay a figure is computed over: a half of
// the trace's time and a part of its series, for validation on held-out
// data.
type Subset struct {
	// Half is 0 for the whole trace, 1 for the samples before Report.Split,
	// 2 for those from it on.
	Half int
	// Series keeps the series it returns true for; nil keeps all.
	Series func(name string) bool
	// Node picks the node size evictions and nodes are counted on, an
	// index into Report.NodeMemory.
	Node int
}

// Memory is policy pi's memory figures under shape si over sub.
func (rep *Report) Memory(pi, si int, sub Subset) MemoryFigures {
	f := MemoryFigures{Shape: rep.Shapes[si].Name}
	var req, lim, used, days float64
	var n, over, kills, changes int
	var pcts []float64
	for _, s := range rep.Series {
		if sub.Series != nil && !sub.Series(s.Name) {
			continue
		}
		st := s.Policies[pi].Shapes[si]
		t := st.Total()
		if sub.Half > 0 {
			t = st.Halves[sub.Half-1]
		}
		if sub.Node < len(st.Evictions) {
			for h, e := range st.Evictions[sub.Node] {
				if sub.Half == 0 || sub.Half == h+1 {
					f.Evictions += float64(e) / float64(max(rep.Packings, 1))
				}
			}
		}
		if t.Samples == 0 {
			continue
		}
		req += t.SumRequest / float64(t.Samples)
		lim += t.SumLimit / float64(t.Samples)
		used += t.SumUsed / float64(t.Samples)
		n += t.Samples
		over += t.OverRequest
		kills += t.Kills
		changes += t.Changes
		days += t.Days
		pcts = append(pcts, t.KillPct())
	}
	if used > 0 {
		f.RequestsOverUsed, f.LimitsOverUsed = req/used, lim/used
	}
	if n > 0 {
		f.OverRequestPct = 100 * float64(over) / float64(n)
		f.OOMKillPct = 100 * float64(kills) / float64(n)
	}
	f.OOMKills = kills
	if days > 0 {
		f.ChangesPerDay = float64(changes) / days
	}
	f.OOMKillPctP90 = percentile(pcts, 0.9)
	if sub.Series == nil && pi < len(rep.nodes) && si < len(rep.nodes[pi]) && sub.Node < len(rep.nodes[pi][si]) {
		var nt nodeTally
		for h, t := range rep.nodes[pi][si][sub.Node] {
			if sub.Half == 0 || sub.Half == h+1 {
				nt.steps += t.steps
				nt.nodeSteps += t.nodeSteps
			}
		}
		if nt.steps > 0 {
			f.Nodes = nt.nodeSteps / float64(nt.steps)
		}
	}
	return f
}

func figures(ts []Tally) Figures {
	var f Figures
	var prov, used, days float64
	var n, over, changes int
	var pcts []float64
	for _, t := range ts {
		if t.Samples == 0 {
			continue
		}
		prov += t.SumProvisioned / float64(t.Samples)
		used += t.SumUsed / float64(t.Samples)
		n += t.Samples
		over += t.Over
		changes += t.Changes
		days += t.Days
		pcts = append(pcts, t.OverPct())
	}
	if used > 0 {
		f.ProvisionedOverUsed = prov / used
	}
	if n > 0 {
		f.OverPct = 100 * float64(over) / float64(n)
	}
	if days > 0 {
		f.ChangesPerDay = float64(changes) / days
	}
	f.OverPctP90 = percentile(pcts, 0.9)
	return f
}

// percentile is the nearest-rank percentile of xs (0 for none).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(rank, 0)]
}

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
}

// PolicyResult is one policy's fleet figures.
type PolicyResult struct {
	Policy string  `json:"policy"`
	Series int     `json:"series"`
	CPU    Figures `json:"cpu"`
	Memory Figures `json:"memory"`
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
	CPU    Tally
	Memory Tally
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

func summarize(name string, series []SeriesResult, pi int) PolicyResult {
	cpu := make([]Tally, 0, len(series))
	mem := make([]Tally, 0, len(series))
	for _, s := range series {
		cpu = append(cpu, s.Policies[pi].CPU)
		mem = append(mem, s.Policies[pi].Memory)
	}
	return PolicyResult{Policy: name, Series: len(series), CPU: figures(cpu), Memory: figures(mem)}
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

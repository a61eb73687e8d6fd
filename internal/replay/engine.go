package replay

import (
	"fmt"
	"runtime"
	"sync"
	"time"
)

// Resources is a CPU (cores) and memory (bytes) pair.
type Resources struct {
	CPU    float64
	Memory float64
}

// Policy is a way of provisioning a workload, replayed one series at a time.
type Policy interface {
	// Name is the policy's label in tables, JSON and charts.
	Name() string
	// Start returns a fresh provisioner for one series. Only an oracle may
	// look ahead in s.Samples; every other policy learns from Observe.
	Start(s *Series) Provisioner
}

// Provisioner is one policy's state for one series.
type Provisioner interface {
	// Provisioned is what the policy has in force at now, decided only
	// from the samples observed so far.
	Provisioned(now time.Time) Resources
	// Observe shows the policy the sample just measured and what was
	// provisioned while it was measured, so it can notice it was short.
	Observe(s Sample, provisioned Resources)
}

// Options control a replay.
type Options struct {
	// Warmup is excluded from the figures at the start of every series:
	// no policy can be judged before it has seen the workload.
	Warmup time.Duration
	// MinSpan drops series spanning less, because after the warm-up too
	// little is left to judge a policy by.
	MinSpan time.Duration
	// Chart names the series whose trajectories are kept for charts.
	Chart []string
	// Workers bounds parallelism; 0 means GOMAXPROCS.
	Workers int
}

// DefaultOptions are what `tailor replay` and the benchmark use.
func DefaultOptions() Options {
	return Options{Warmup: 24 * time.Hour, MinSpan: 7 * 24 * time.Hour}
}

// Run replays every usable series through every policy, open loop.
func Run(series []Series, policies []Policy, opts Options) (*Report, error) {
	if len(policies) == 0 {
		return nil, fmt.Errorf("no policy to replay")
	}
	names := map[string]bool{}
	for _, p := range policies {
		if names[p.Name()] {
			return nil, fmt.Errorf("policy %q named twice", p.Name())
		}
		names[p.Name()] = true
	}
	chart := map[string]bool{}
	for _, c := range opts.Chart {
		chart[c] = true
	}
	rep := &Report{Warmup: opts.Warmup}
	var usable []*Series
	for i := range series {
		s := &series[i]
		if s.Span() < opts.MinSpan || s.Span() <= opts.Warmup {
			rep.Skipped = append(rep.Skipped, s.Name)
			continue
		}
		usable = append(usable, s)
	}
	for c := range chart {
		found := false
		for _, s := range usable {
			found = found || s.Name == c
		}
		if !found {
			return nil, fmt.Errorf("chart series %q is not among the usable series", c)
		}
	}
	rep.Series = make([]SeriesResult, len(usable))
	forEach(len(usable), opts.Workers, func(i int) {
		rep.Series[i] = replaySeries(usable[i], policies, opts.Warmup, chart[usable[i].Name])
	})
	rep.Policies = make([]PolicyResult, len(policies))
	for i, p := range policies {
		rep.Policies[i] = summarize(p.Name(), rep.Series, i)
	}
	return rep, nil
}

// replaySeries runs one series through every policy. The provisioned value
// scored against a sample is what the policy set before seeing it; usage is
// not capped by it, because the trace recorded what the workload wanted.
func replaySeries(s *Series, policies []Policy, warmup time.Duration, keep bool) SeriesResult {
	res := SeriesResult{Name: s.Name, Policies: make([]SeriesPolicy, len(policies))}
	start := s.Samples[0].Time.Add(warmup)
	if keep {
		res.Trajectory = &Trajectory{Provisioned: make([][]Resources, len(policies))}
		for _, smp := range s.Samples {
			if !smp.Time.Before(start) {
				res.Trajectory.Samples = append(res.Trajectory.Samples, smp)
			}
		}
	}
	for pi, pol := range policies {
		prov := pol.Start(s)
		acc := &res.Policies[pi]
		var prev Resources
		var first, last time.Time
		for _, smp := range s.Samples {
			r := prov.Provisioned(smp.Time)
			if !smp.Time.Before(start) {
				if first.IsZero() {
					first = smp.Time
				} else {
					if r.CPU != prev.CPU {
						acc.CPU.Changes++
					}
					if r.Memory != prev.Memory {
						acc.Memory.Changes++
					}
				}
				last = smp.Time
				prev = r
				acc.CPU.add(smp.CPU, r.CPU)
				if smp.HasMemory() {
					acc.Memory.add(smp.Memory, r.Memory)
				}
				if keep {
					res.Trajectory.Provisioned[pi] = append(res.Trajectory.Provisioned[pi], r)
				}
			}
			prov.Observe(smp, r)
		}
		days := last.Sub(first).Hours() / 24
		acc.CPU.Days, acc.Memory.Days = days, days
	}
	return res
}

// forEach calls f for 0..n-1 on up to workers goroutines (0 means
// GOMAXPROCS) and returns when all calls have.
func forEach(n, workers int, f func(i int)) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

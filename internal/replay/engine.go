package replay

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"
)

// Resources is a CPU (cores) and memory (bytes) pair, with the memory
// limit apart from the request.
type Resources struct {
	CPU float64
	// Memory is the memory request: what the scheduler reserves.
	Memory float64
	// MemoryLimit, from Provisioned, is the memory limit a policy advises
	// apart from the request (0: none of its own; the shape derives the
	// limit from the request). To Observe, it is the limit that was in
	// force, where the kernel kills (+Inf: no limit).
	MemoryLimit float64
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
	// in force while it was measured (the request and, in MemoryLimit, the
	// limit), so it can notice it was short.
	Observe(s Sample, inForce Resources)
}

// ShapeBlind is implemented by a policy whose Observe never reads what
// was in force (it learns from usage alone, or looks ahead): one replay of
// it is scored under every shape, where any other policy is replayed once
// per shape, since an OOM kill comes at a shape's limit.
type ShapeBlind interface {
	ShapeBlind() bool
}

func shapeBlind(p Policy) bool {
	b, ok := p.(ShapeBlind)
	return ok && b.ShapeBlind()
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
	// Shapes are scored for memory, each policy's advice made into a
	// request and a limit by each (PolicyResult.Shapes). Empty: none are
	// reported, and memory is scored as one value, limit = request. The
	// CPU and single-value memory figures come from the first shape's
	// replay, which should be LimitEqualsRequest to stay comparable.
	Shapes []Shape
	// NodeMemory packs each policy's containers, under each shape, onto
	// simulated nodes of each of these many bytes by their memory requests,
	// one packing per size, and counts node-pressure evictions (see pack):
	// how safe a request is depends on the node it shares (Subset.Node
	// picks the size a figure is for). Empty: no packing.
	NodeMemory []float64
	// Packings is how many times each size is packed, each time with the
	// pods placed in another order (the same for every policy); evictions
	// and nodes are the mean over the packings. Which pods share a node
	// moves a month's handful of evictions as much as the requests do, so
	// a comparison of policies needs more than one draw. 0 means 1.
	Packings int
	// Split divides the first half of the trace from the second for
	// validation on held-out time; zero is the middle of the span of the
	// usable series.
	Split time.Time
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
	for _, sh := range opts.Shapes {
		if err := sh.Validate(); err != nil {
			return nil, err
		}
	}
	for _, m := range opts.NodeMemory {
		if !(m > 0) || math.IsInf(m, 0) {
			return nil, fmt.Errorf("node memory %g must be a positive number of bytes", m)
		}
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
	shapes := opts.Shapes
	if len(shapes) == 0 {
		shapes = []Shape{LimitEqualsRequest}
	}
	rep.Shapes = opts.Shapes
	rep.NodeMemory = opts.NodeMemory
	rep.Packings = max(opts.Packings, 1)
	rep.Split = opts.Split
	if rep.Split.IsZero() {
		rep.Split = midpoint(usable)
	}
	rep.Series = make([]SeriesResult, len(usable))
	for i, s := range usable {
		rep.Series[i] = SeriesResult{Name: s.Name, Policies: make([]SeriesPolicy, len(policies))}
		if chart[s.Name] {
			tr := &Trajectory{Provisioned: make([][]Resources, len(policies))}
			start := s.Samples[0].Time.Add(opts.Warmup)
			for _, smp := range s.Samples {
				if !smp.Time.Before(start) {
					tr.Samples = append(tr.Samples, smp)
				}
			}
			rep.Series[i].Trajectory = tr
		}
	}
	rep.Policies = make([]PolicyResult, len(policies))
	rep.nodes = make([][][][2]nodeTally, len(policies))
	for pi, p := range policies {
		rep.nodes[pi] = make([][][2]nodeTally, len(opts.Shapes))
		// One policy at a time, its series side by side: the plans the
		// packing needs are held for one policy only.
		plans := make([][][]plan, len(usable))
		forEach(len(usable), opts.Workers, func(i int) {
			var tr *[]Resources
			if t := rep.Series[i].Trajectory; t != nil {
				tr = &t.Provisioned[pi]
			}
			rep.Series[i].Policies[pi], plans[i] = replaySeries(usable[i], p, shapes, opts, rep.Split, tr)
		})
		if len(opts.NodeMemory) > 0 && len(opts.Shapes) > 0 {
			for si := range opts.Shapes {
				rep.nodes[pi][si] = make([][2]nodeTally, len(opts.NodeMemory))
				for i := range usable {
					rep.Series[i].Policies[pi].Shapes[si].Evictions = make([][2]int, len(opts.NodeMemory))
				}
			}
			// Every (shape, node size) packs apart, its packings in turn;
			// each writes only its own entries.
			nm := len(opts.NodeMemory)
			forEach(len(opts.Shapes)*nm, opts.Workers, func(k int) {
				si, ni := k/nm, k%nm
				pods := make([]pod, len(usable))
				for i, s := range usable {
					pods[i] = pod{series: s, plan: plans[i][si]}
				}
				for salt := range rep.Packings {
					res := pack(pods, opts.NodeMemory[ni], rep.Split, salt)
					for i := range usable {
						e := &rep.Series[i].Policies[pi].Shapes[si].Evictions[ni]
						e[0] += res.evictions[i][0]
						e[1] += res.evictions[i][1]
					}
					for h, t := range res.nodes {
						n := &rep.nodes[pi][si][ni][h]
						n.steps += t.steps
						n.nodeSteps += t.nodeSteps
					}
				}
			})
		}
		rep.Policies[pi] = summarize(p.Name(), rep, pi)
	}
	return rep, nil
}

// midpoint is halfway between the earliest and the latest sample of the
// series, to the second.
func midpoint(series []*Series) time.Time {
	var first, last time.Time
	for _, s := range series {
		a, b := s.Samples[0].Time, s.Samples[len(s.Samples)-1].Time
		if first.IsZero() || a.Before(first) {
			first = a
		}
		if b.After(last) {
			last = b
		}
	}
	return first.Add(last.Sub(first) / 2).Truncate(time.Second)
}

// plan is a policy's memory request and limit in force from a scored
// sample on, recorded when either changes: what the packing replays.
type plan struct {
	at             int32
	request, limit float32
}

// replaySeries runs one series through one policy, once per shape unless
// the policy is shape-blind. The provisioned value scored against a sample
// is what the policy set before seeing it; usage is not capped by it,
// because the trace recorded what the workload wanted. The CPU and the
// single-value memory figures come from the first shape's replay; tr, when
// not nil, receives that replay's trajectory. It returns, per shape, the
// plan of requests and limits in force for the packing.
func replaySeries(s *Series, pol Policy, shapes []Shape, opts Options, split time.Time, tr *[]Resources) (SeriesPolicy, [][]plan) {
	acc := SeriesPolicy{Shapes: make([]ShapeTally, len(shapes))}
	plans := make([][]plan, len(shapes))
	// Which shapes each replay scores: the first shape's is told to the
	// policy.
	var runs [][]int
	if shapeBlind(pol) {
		all := make([]int, len(shapes))
		for i := range all {
			all[i] = i
		}
		runs = [][]int{all}
	} else {
		for i := range shapes {
			runs = append(runs, []int{i})
		}
	}
	start := s.Samples[0].Time.Add(opts.Warmup)
	for ri, scored := range runs {
		prov := pol.Start(s)
		var prev Resources
		var first, last time.Time
		scorers := make([]shapeScorer, len(scored))
		for k, si := range scored {
			scorers[k] = shapeScorer{shape: shapes[si], tally: &acc.Shapes[si], plan: &plans[si], split: split}
		}
		for j, smp := range s.Samples {
			r := prov.Provisioned(smp.Time)
			inForce := r
			for k := range scorers {
				scorers[k].set(r, s.MemoryLimit)
			}
			inForce.Memory, inForce.MemoryLimit = scorers[0].req, scorers[0].lim
			if !smp.Time.Before(start) {
				if ri == 0 {
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
					if tr != nil {
						*tr = append(*tr, r)
					}
				}
				for k := range scorers {
					scorers[k].score(j, smp)
				}
			}
			prov.Observe(smp, inForce)
		}
		if ri == 0 {
			days := last.Sub(first).Hours() / 24
			acc.CPU.Days, acc.Memory.Days = days, days
		}
		for k := range scorers {
			scorers[k].finish()
		}
	}
	return acc, plans
}

// shapeScorer scores one series' memory under one shape, by half.
type shapeScorer struct {
	shape    Shape
	tally    *ShapeTally
	plan     *[]plan
	split    time.Time
	req, lim float64
	// What the plan last recorded; planned is false before the first.
	planned          bool
	planReq, planLim float64
	first, last      [2]time.Time
}

// set applies the shape to what the policy advises now.
func (sc *shapeScorer) set(want Resources, own float64) {
	sc.req, sc.lim = sc.shape.InForce(want, own)
}

// score counts sample j, measured under what set last applied.
func (sc *shapeScorer) score(j int, smp Sample) {
	half := 0
	if !smp.Time.Before(sc.split) {
		half = 1
	}
	h := &sc.tally.Halves[half]
	changed := !sc.planned || sc.req != sc.planReq || sc.lim != sc.planLim
	if sc.first[half].IsZero() {
		sc.first[half] = smp.Time
	} else if changed {
		h.Changes++
	}
	sc.last[half] = smp.Time
	if changed {
		*sc.plan = append(*sc.plan, plan{at: int32(j), request: float32(sc.req), limit: float32(sc.lim)})
		sc.planned, sc.planReq, sc.planLim = true, sc.req, sc.lim
	}
	if smp.HasMemory() {
		h.add(smp.Memory, sc.req, sc.lim)
	}
}

func (sc *shapeScorer) finish() {
	for half := range 2 {
		if !sc.first[half].IsZero() {
			sc.tally.Halves[half].Days = sc.last[half].Sub(sc.first[half]).Hours() / 24
		}
	}
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

package report

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// DefaultStep is the resolution of a history read and the range of its CPU
// rate(): a sample every 5 minutes (2,016 a week per container).
const DefaultStep = 5 * time.Minute

// MaxPoints is the most samples Prometheus returns per series of a range
// query; a window over a step asking for more is refused.
const MaxPoints = 11000

// Queries read the history from cAdvisor's series, as a Prometheus that
// scrapes the kubelets keeps them; %s is the namespace.
const (
	cpuQuery       = `max by (pod, container) (rate(container_cpu_usage_seconds_total{namespace=%[1]q, container!="", container!="POD"}[%[2]s]))`
	memoryQuery    = `max by (pod, container) (container_memory_working_set_bytes{namespace=%q, container!="", container!="POD"})`
	throttledQuery = `sum by (pod, container) (increase(container_cpu_cfs_throttled_periods_total{namespace=%[1]q, container!=""}[%[2]s])) / sum by (pod, container) (increase(container_cpu_cfs_periods_total{namespace=%[1]q, container!=""}[%[2]s]))`
)

// ReadHistory fills each workload's History from Prometheus over window
// ending at now, a sample each step (also the CPU rate's range; 0 is
// DefaultStep): per container, at each step, the busiest of the pods that
// are or were the workload's (matched by name: a Deployment's pods of
// earlier ReplicaSets count), and the share of CFS periods throttled over
// the whole window. A namespace whose queries fail is an error: a report
// without the history it was asked for would mislead.
func ReadHistory(ctx context.Context, api promv1.API, workloads []*Workload, window, step time.Duration, now time.Time) error {
	if step <= 0 {
		step = DefaultStep
	}
	byNS := map[string][]*Workload{}
	for _, w := range workloads {
		byNS[w.Namespace] = append(byNS[w.Namespace], w)
	}
	r := promv1.Range{Start: now.Add(-window), End: now, Step: step}
	for ns, ws := range byNS {
		cpu, _, err := api.QueryRange(ctx, fmt.Sprintf(cpuQuery, ns, model.Duration(step).String()), r)
		if err != nil {
			return fmt.Errorf("reading CPU history of namespace %s: %w", ns, err)
		}
		mem, _, err := api.QueryRange(ctx, fmt.Sprintf(memoryQuery, ns), r)
		if err != nil {
			return fmt.Errorf("reading memory history of namespace %s: %w", ns, err)
		}
		thr, _, err := api.Query(ctx, fmt.Sprintf(throttledQuery, ns, model.Duration(window).String()), now)
		if err != nil {
			return fmt.Errorf("reading CPU throttling of namespace %s: %w", ns, err)
		}
		patterns := make([]*regexp.Regexp, len(ws))
		for i, w := range ws {
			patterns[i] = podPattern(w)
		}
		owner := func(m model.Metric) (*Workload, string) {
			pod, container := string(m["pod"]), string(m["container"])
			for i, w := range ws {
				if patterns[i].MatchString(pod) {
					return w, container
				}
			}
			return nil, ""
		}
		merge := func(v model.Value, rate bool, into func(h *History) *[]Sample) {
			matrix, ok := v.(model.Matrix)
			if !ok {
				return
			}
			for _, s := range matrix {
				w, c := owner(s.Metric)
				if w == nil {
					continue
				}
				points := s.Values
				if rate {
					points = matureRates(points, r.Start, step)
				}
				h := w.history(c)
				*into(h) = maxMerge(*into(h), points)
			}
		}
		merge(cpu, true, func(h *History) *[]Sample { return &h.CPU })
		merge(mem, false, func(h *History) *[]Sample { return &h.Memory })
		if vec, ok := thr.(model.Vector); ok {
			for _, s := range vec {
				w, c := owner(s.Metric)
				if w == nil || math.IsNaN(float64(s.Value)) {
					continue
				}
				h := w.history(c)
				h.Throttled = max(h.Throttled, float64(s.Value))
			}
		}
	}
	return nil
}

func (w *Workload) history(container string) *History {
	if w.History == nil {
		w.History = map[string]*History{}
	}
	h, ok := w.History[container]
	if !ok {
		h = &History{Throttled: -1}
		w.History[container] = h
	}
	return h
}

// matureRates drops the rates of a series' first rateWindow (the CPU
// query's rate() range), unless it
// already ran when the history begins: Prometheus divides a rate by its
// whole range, so a container younger than the range reads low (a minute
// old, at a fifth of its use).
func matureRates(points []model.SamplePair, start time.Time, rateWindow time.Duration) []model.SamplePair {
	if len(points) == 0 || !points[0].Timestamp.Time().After(start) {
		return points
	}
	born := points[0].Timestamp.Time()
	for i, p := range points {
		if p.Timestamp.Time().Sub(born) >= rateWindow {
			return points[i:]
		}
	}
	return nil
}

// maxMerge adds points to samples, keeping the larger value where both
// have the same time: the busiest pod at each step.
func maxMerge(samples []Sample, points []model.SamplePair) []Sample {
	at := make(map[int64]int, len(samples))
	for i, s := range samples {
		at[s.Time.Unix()] = i
	}
	for _, p := range points {
		v := float64(p.Value)
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			continue
		}
		t := p.Timestamp.Time()
		if i, ok := at[t.Unix()]; ok {
			samples[i].Value = max(samples[i].Value, v)
			continue
		}
		at[t.Unix()] = len(samples)
		samples = append(samples, Sample{Time: t, Value: v})
	}
	return samples
}

// podPattern matches the names of the pods a workload creates: a
// Deployment's ReplicaSets' (name-hash-suffix), a StatefulSet's (name-N),
// a DaemonSet's, ReplicaSet's or Job's (name-suffix), or the pod itself.
func podPattern(w *Workload) *regexp.Regexp {
	name := regexp.QuoteMeta(w.Name)
	switch w.Kind {
	case "Deployment":
		return regexp.MustCompile(`^` + name + `-[a-z0-9]{1,10}-[a-z0-9]{5}$`)
	case "StatefulSet":
		return regexp.MustCompile(`^` + name + `-[0-9]+$`)
	case "Pod":
		return regexp.MustCompile(`^` + name + `$`)
	}
	return regexp.MustCompile(`^` + name + `-[a-z0-9]{5}$`)
}

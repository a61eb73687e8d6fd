package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/tailorhq/tailor/internal/jvm"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/podcontainers"
)

// DefaultNodeMaxAge is how old a node's newest report may be before its
// pods are read through the fallback instead: three of the agent's
// default 5s report intervals, so one lost push does not flap a node
// between sources.
const DefaultNodeMaxAge = 15 * time.Second

// Source answers usage from the agents' reports, and from Fallback for
// the pods of nodes with no fresh report (no agent there, or one that
// stopped).
type Source struct {
	Receiver *Receiver
	// Fallback reads the pods no agent reports on; nil holds them.
	Fallback metrics.Source
	Clock    clock.PassiveClock
	// NodeMaxAge: see DefaultNodeMaxAge.
	NodeMaxAge time.Duration
}

var _ metrics.Source = (*Source)(nil)

func (s *Source) Name() string { return "agent" }

// Usage reads pods from the reports of their nodes; the rest go to the
// fallback in one call. Only when neither can answer is it an error.
func (s *Source) Usage(ctx context.Context, pods []*corev1.Pod) (metrics.Result, error) {
	now := s.Clock.Now()
	maxAge := s.NodeMaxAge
	if maxAge <= 0 {
		maxAge = DefaultNodeMaxAge
	}
	var mine, rest []*corev1.Pod
	readings := map[metrics.Key]metrics.Reading{}
	for _, p := range pods {
		nr := s.Receiver.node(p.Spec.NodeName)
		if nr == nil || now.Sub(nr.at) > maxAge {
			rest = append(rest, p)
			continue
		}
		mine = append(mine, p)
		for _, st := range statuses(p) {
			key := metrics.Key{Namespace: p.Namespace, Pod: p.Name, Container: st.Name}
			if r, ok := reading(nr, p, st); ok {
				readings[key] = r
			}
		}
	}
	res := metrics.Assemble(mine, readings, now, maxAge)
	if len(rest) == 0 {
		return res, nil
	}
	if s.Fallback == nil {
		hold(&res, rest, "no fresh report from the node's agent, and no fallback source")
		res.Sort()
		return res, nil
	}
	fb, err := s.Fallback.Usage(ctx, rest)
	if err != nil {
		if len(mine) == 0 {
			return metrics.Result{}, fmt.Errorf("no fresh agent report for %d pods, and the %s fallback failed: %w", len(rest), s.Fallback.Name(), err)
		}
		hold(&res, rest, fmt.Sprintf("no fresh report from the node's agent, and the %s fallback failed: %v", s.Fallback.Name(), err))
		res.Sort()
		return res, nil
	}
	for k, u := range fb.Usage {
		res.Usage[k] = u
	}
	res.Problems = append(res.Problems, fb.Problems...)
	res.Sort()
	return res, nil
}

// statuses are the statuses of pod's containers that have usage: regular
// containers and sidecars.
func statuses(p *corev1.Pod) []corev1.ContainerStatus {
	names := map[string]bool{}
	for _, c := range podcontainers.Names(p) {
		names[c] = true
	}
	var out []corev1.ContainerStatus
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, st := range list {
			if names[st.Name] {
				out = append(out, st)
			}
		}
	}
	return out
}

// reading is the report's figures for one container; false when the
// report has none (a container just started, or the agent missed it).
func reading(nr *nodeReport, p *corev1.Pod, st corev1.ContainerStatus) (metrics.Reading, bool) {
	_, id, ok := strings.Cut(st.ContainerID, "://")
	if !ok {
		return metrics.Reading{}, false
	}
	c, ok := nr.containers[id]
	// The agent names the pod by the cgroup it found the container in: a
	// container ID under another pod's UID is not this pod's.
	if !ok || c.PodUID != string(p.UID) {
		return metrics.Reading{}, false
	}
	r := metrics.Reading{Memory: metrics.Value(float64(c.WorkingSet), c.Time), Window: c.Window.Duration()}
	if c.Window > 0 {
		r.CPU = metrics.Value(c.CPU, c.Time)
	} else {
		r.CPU = metrics.Unusable(metrics.ReasonWarmingUp, "the agent has one sample of the container so far; a rate needs two")
	}
	if c.Throttled != nil {
		r.Throttled = metrics.Value(*c.Throttled, c.Time)
	}
	if c.MemoryGrowth > 0 {
		r.MemoryGrowth = metrics.Value(c.MemoryGrowth, c.Time)
	}
	if c.MemoryPressure != nil {
		r.MemoryPressure = metrics.Value(*c.MemoryPressure, c.Time)
	}
	r.MemoryAtRisk = c.MemoryAtRisk
	if j := c.JVM; j != nil && j.HeapMax > 0 {
		// Validate held the figures to a JVM's range when the report came.
		r.JVM = &jvm.Measured{HeapMax: int64(j.HeapMax), NonHeap: int64(j.NonHeap)}
	}
	return r, true
}

// hold records why pods' containers have no usage.
func hold(res *metrics.Result, pods []*corev1.Pod, why string) {
	for _, p := range pods {
		for _, c := range podcontainers.Names(p) {
			res.Problem(metrics.Key{Namespace: p.Namespace, Pod: p.Name, Container: c}, metrics.MetricAll, metrics.ReasonMissing, why)
		}
	}
}

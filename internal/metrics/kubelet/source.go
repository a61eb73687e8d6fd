package kubelet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/tailorhq/tailor/internal/metrics"
)

const (
	cpuUsage        = "container_cpu_usage_seconds_total"
	workingSet      = "container_memory_working_set_bytes"
	throttledPeriod = "container_cpu_cfs_throttled_periods_total"
	cfsPeriods      = "container_cpu_cfs_periods_total"
)

// Options configure a Source.
type Options struct {
	// Throttling also reads /metrics/cadvisor for CFS throttling. It is the
	// kubelet's biggest metrics page (~90 KB for a handful of pods, growing
	// with every container), so it is opt-in.
	Throttling bool
	// MaxAge is how old a sample may be before a container is held
	// (default 1m: the kubelet refreshes container stats every 10-15s).
	MaxAge time.Duration
	// Clock defaults to the real clock; tests give a fake one.
	Clock clock.PassiveClock
}

// Source reads the kubelets through the apiserver's node proxy.
type Source struct {
	client rest.Interface
	opts   Options

	mu    sync.Mutex
	state map[metrics.Key]*containerState
}

// containerState is what the Source remembers of one container.
type containerState struct {
	node      string
	cpu       counter
	throttled throttling
}

var _ metrics.Source = (*Source)(nil)

// New returns a Source that reaches the kubelets through client, a core/v1
// REST client (clientset.CoreV1().RESTClient()). Its identity needs get on
// nodes/proxy.
func New(client rest.Interface, o Options) *Source {
	if o.MaxAge <= 0 {
		o.MaxAge = time.Minute
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return &Source{client: client, opts: o, state: map[metrics.Key]*containerState{}}
}

func (s *Source) Name() string { return "kubelet" }

// Usage scrapes each node that runs one of pods once. A node that cannot be
// read holds its containers; only when no node can be read is it an error.
func (s *Source) Usage(ctx context.Context, pods []*corev1.Pod) (metrics.Result, error) {
	byNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
	}
	nodes := make([]string, 0, len(byNode))
	for n := range byNode {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)

	type nodeScrape struct {
		resource, cadvisor scrape
		reason             metrics.Reason
		err                error
	}
	scrapes := map[string]nodeScrape{}
	var errs []error
	for _, node := range nodes {
		var ns nodeScrape
		ns.resource, ns.reason, ns.err = s.get(ctx, node, "metrics/resource", cpuUsage, workingSet)
		if ns.err == nil && s.opts.Throttling {
			ns.cadvisor, ns.reason, ns.err = s.get(ctx, node, "metrics/cadvisor", throttledPeriod, cfsPeriods)
		}
		if ns.err != nil {
			errs = append(errs, ns.err)
		}
		scrapes[node] = ns
	}
	if len(nodes) > 0 && len(errs) == len(nodes) {
		return metrics.Result{}, errors.Join(errs...)
	}

	now := s.opts.Clock.Now()
	readings := map[metrics.Key]metrics.Reading{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, node := range nodes {
		sc := scrapes[node]
		for _, p := range byNode[node] {
			for _, c := range metrics.Containers(p) {
				key := metrics.Key{Namespace: p.Namespace, Pod: p.Name, Container: c}
				if sc.err != nil {
					bad := metrics.Unusable(sc.reason, sc.err.Error())
					readings[key] = metrics.Reading{CPU: bad, Memory: bad}
					continue
				}
				readings[key] = s.reading(node, key, sc.resource, sc.cadvisor)
			}
		}
		if sc.err == nil {
			s.forget(node, sc.resource)
		}
	}
	return metrics.Assemble(pods, readings, now, s.opts.MaxAge), nil
}

// reading turns one container's samples into rates, updating its state.
func (s *Source) reading(node string, key metrics.Key, resource, cadvisor scrape) metrics.Reading {
	st, ok := s.state[key]
	if !ok {
		st = &containerState{node: node}
		s.state[key] = st
	}
	var r metrics.Reading
	if p, ok := resource[cpuUsage][key]; ok {
		r.CPU, r.Window = st.cpu.observe(p, "CPU usage")
	} else {
		r.CPU = metrics.Unusable(metrics.ReasonMissing, "the kubelet reports no "+cpuUsage+" for this container")
	}
	if p, ok := resource[workingSet][key]; ok {
		r.Memory = metrics.Value(p.v, p.t)
	} else {
		r.Memory = metrics.Unusable(metrics.ReasonMissing, "the kubelet reports no "+workingSet+" for this container")
	}
	if cadvisor != nil {
		// cAdvisor has CFS counters only for containers with a CPU limit;
		// without them there is simply nothing to say.
		th, okT := cadvisor[throttledPeriod][key]
		pe, okP := cadvisor[cfsPeriods][key]
		if okT && okP {
			r.Throttled = st.throttled.observe(th, pe)
		}
	}
	return r
}

// forget drops the state of containers that node no longer reports, so
// deleted pods do not accumulate.
func (s *Source) forget(node string, resource scrape) {
	for key, st := range s.state {
		if st.node != node {
			continue
		}
		if _, ok := resource[cpuUsage][key]; !ok {
			delete(s.state, key)
		}
	}
}

// get reads one metrics page of node; the reason says how a failure should
// be reported for its containers.
func (s *Source) get(ctx context.Context, node, path string, names ...string) (scrape, metrics.Reason, error) {
	raw, err := s.client.Get().Resource("nodes").Name(node).SubResource("proxy").Suffix(path).DoRaw(ctx)
	if err != nil {
		return nil, metrics.ReasonMissing, fmt.Errorf("read %s of node %s through the apiserver proxy: %w", path, node, err)
	}
	sc, err := parse(raw, names...)
	if err != nil {
		return nil, metrics.ReasonMalformed, fmt.Errorf("node %s %s: %w", node, path, err)
	}
	return sc, "", nil
}

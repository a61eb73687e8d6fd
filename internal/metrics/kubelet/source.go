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

// DefaultShareFor is how long one read of a node serves every caller. cAdvisor
// refreshes container stats every 10-20s (10s housekeeping plus up to 100%
// jitter), so a read younger than 5s almost always holds the samples a new
// read would; and 5s is half the manager's default 10s sync period, so each
// policy's next sync reads anew while the policies synced in between share
// the read: a node is read at most once per 5s, not once per policy.
const DefaultShareFor = 5 * time.Second

// DefaultTimeout bounds one page read through the apiserver's proxy: a
// healthy kubelet answers in well under a second, and metrics-server gives
// the same reads 10s by default; 5s keeps a hung node from holding a read
// slot across a whole 10s sync.
const DefaultTimeout = 5 * time.Second

// DefaultConcurrency bounds the node reads in flight: enough to hide the
// proxy's round trips, few enough not to crowd the apiserver.
const DefaultConcurrency = 8

// Options configure a Source.
type Options struct {
	// Throttling also reads /metrics/cadvisor for CFS throttling. It is the
	// kubelet's biggest metrics page (~90 KB for a handful of pods, growing
	// with every container), so it is opt-in.
	Throttling bool
	// MaxAge is how old a sample may be before a container is held
	// (default 1m: the kubelet refreshes container stats every 10-15s).
	MaxAge time.Duration
	// ShareFor is how long one read of a node's pages serves every caller
	// that needs the node, failures included (so a dead node costs one
	// timeout per window, not one per policy; the first caller after the
	// window reads it again). 0 is DefaultShareFor; negative reads on every
	// call, sharing only a read already in flight.
	ShareFor time.Duration
	// Concurrency bounds the node reads in flight, across all callers
	// (0 is DefaultConcurrency).
	Concurrency int
	// Timeout bounds each page read (0 is DefaultTimeout): a kubelet that
	// hangs costs its own pods their figures, not the whole read, and holds
	// a slot no longer than this.
	Timeout time.Duration
	// Clock defaults to the real clock; tests give a fake one.
	Clock clock.PassiveClock
	// Namespaces, if set, says whose containers a read keeps: a manager
	// of one shard reads whole nodes but asks only about its own
	// namespaces' pods, so keeping the others' figures for ShareFor would
	// only cost memory.
	Namespaces func(namespace string) bool
}

// Source reads the kubelets through the apiserver's node proxy.
type Source struct {
	client rest.Interface
	opts   Options
	// slots holds a token per read in flight.
	slots chan struct{}

	readsMu sync.Mutex
	reads   map[string]*read // by node

	mu    sync.Mutex
	state map[string]map[metrics.Key]*containerState // by node
}

// containerState is what the Source remembers of one container.
type containerState struct {
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
	if o.ShareFor == 0 {
		o.ShareFor = DefaultShareFor
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return &Source{
		client: client,
		opts:   o,
		slots:  make(chan struct{}, o.Concurrency),
		reads:  map[string]*read{},
		state:  map[string]map[metrics.Key]*containerState{},
	}
}

func (s *Source) Name() string { return "kubelet" }

// Usage reads each node that runs one of pods, concurrently, or reuses a
// read another caller made within ShareFor. A node that cannot be read
// holds its containers; only when no node can be read is it an error.
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

	s.dropExpired()
	got, err := s.readAll(ctx, nodes)
	if err != nil {
		return metrics.Result{}, fmt.Errorf("read the kubelets of %d nodes: %w", len(nodes), err)
	}
	var errs []error
	for _, p := range got {
		if p.err != nil {
			errs = append(errs, p.err)
		}
	}
	if len(nodes) > 0 && len(errs) == len(nodes) {
		return metrics.Result{}, errors.Join(errs...)
	}

	now := s.opts.Clock.Now()
	readings := map[metrics.Key]metrics.Reading{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, node := range nodes {
		pg := got[i]
		for _, p := range byNode[node] {
			for _, c := range metrics.Containers(p) {
				key := metrics.Key{Namespace: p.Namespace, Pod: p.Name, Container: c}
				if pg.err != nil {
					bad := metrics.Unusable(pg.reason, pg.err.Error())
					readings[key] = metrics.Reading{CPU: bad, Memory: bad}
					continue
				}
				readings[key] = s.reading(node, key, pg.resource, pg.cadvisor)
			}
		}
	}
	return metrics.Assemble(pods, readings, now, s.opts.MaxAge), nil
}

// reading turns one container's samples into rates, updating its state.
func (s *Source) reading(node string, key metrics.Key, resource, cadvisor scrape) metrics.Reading {
	onNode := s.state[node]
	if onNode == nil {
		onNode = map[metrics.Key]*containerState{}
		s.state[node] = onNode
	}
	st, ok := onNode[key]
	if !ok {
		st = &containerState{}
		onNode[key] = st
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
			r.Throttled, r.ThrottledWindow = st.throttled.observe(th, pe)
		}
	}
	return r
}

// forget drops the state of containers that a new read of node no longer
// reports, so deleted pods do not accumulate. It runs once per read, not per
// caller: a caller still holding an older read may bring a deleted
// container's state back, and the node's next read drops it again.
func (s *Source) forget(node string, resource scrape) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key := range s.state[node] {
		if _, ok := resource[cpuUsage][key]; !ok {
			delete(s.state[node], key)
		}
	}
	if len(s.state[node]) == 0 {
		delete(s.state, node)
	}
}

// getPage reads one metrics page of node; the reason says how a failure
// should be reported for its containers.
func (s *Source) getPage(ctx context.Context, node, path string, names ...string) (scrape, metrics.Reason, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	raw, err := s.client.Get().Resource("nodes").Name(node).SubResource("proxy").Suffix(path).DoRaw(ctx)
	if err != nil {
		return nil, metrics.ReasonMissing, fmt.Errorf("read %s of node %s through the apiserver proxy: %w", path, node, err)
	}
	sc, err := parse(raw, s.opts.Namespaces, names...)
	if err != nil {
		return nil, metrics.ReasonMalformed, fmt.Errorf("node %s %s: %w", node, path, err)
	}
	return sc, "", nil
}

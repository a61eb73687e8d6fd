package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/podcontainers"
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

// DefaultTimeout bounds one page read: a healthy kubelet answers in well
// under a second, and metrics-server gives the same reads 10s by default;
// 5s keeps a hung node from holding a read slot across a whole 10s sync.
const DefaultTimeout = 5 * time.Second

// DefaultConcurrency bounds the node reads in flight: enough to hide the
// round trips, few enough not to crowd the apiserver when the reads go
// through its proxy.
const DefaultConcurrency = 8

// DefaultMaxPageBytes is the largest metrics page read (32 MiB). The
// kubelet's /metrics/cadvisor page is the large one: cAdvisor's own
// collector, with the kubelet's metric set and labels, writes 74 KB for a
// pod of one container (about 75 series for each of the container, the
// sandbox and the pod cgroup), so 8.2 MB at the kubelet's default of 110
// pods, 18.6 MB at the 250 pods a node is commonly allowed at most, and
// about 25 MB at 250 pods of two containers. /metrics/resource is about
// 1 KB a pod. A page over the cap is refused rather than read, and only
// the families the source keeps are parsed (linesOf), so a read in flight
// holds little more than the series it keeps.
const DefaultMaxPageBytes = 32 << 20

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
	// MaxPageBytes is the largest page read (0 is DefaultMaxPageBytes): a
	// larger one is refused and logged once until the node's pages fit
	// again, so that a kubelet cannot make the manager read or hold an
	// unbounded answer: a resource page refused holds the node's
	// containers (ReasonTooLarge), a cadvisor page their throttling.
	MaxPageBytes int64
	// Registerer, if set, gets the source's metric: pages refused for
	// their size.
	Registerer prometheus.Registerer
	// Clock defaults to the real clock; tests give a fake one.
	Clock clock.PassiveClock
	// Namespaces, if set, says whose containers a read keeps: a manager
	// of one shard reads whole nodes but asks only about its own
	// namespaces' pods, so keeping the others' figures for ShareFor would
	// only cost memory.
	Namespaces func(namespace string) bool
}

// Source reads usage from the kubelets' metrics pages, opened by pages.
type Source struct {
	pages Pages
	opts  Options
	// refused counts the pages refused for their size, by page.
	refused *prometheus.CounterVec
	// slots holds a token per read in flight.
	slots chan struct{}

	readsMu sync.Mutex
	reads   map[string]*read // by node

	mu    sync.Mutex
	state map[string]map[metrics.Key]*containerState // by node
	// tooLarge holds the pages ("node page") last refused for their size,
	// so that each is logged once, not once per read.
	tooLarge map[string]bool
}

// containerState is what the Source remembers of one container.
type containerState struct {
	cpu       counter
	throttled throttling
}

var _ metrics.Source = (*Source)(nil)

// New returns a Source that reads the kubelets' pages opened by pages:
// Direct, each kubelet on its own port, or APIServerProxy.
func New(pages Pages, o Options) *Source {
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
	if o.MaxPageBytes <= 0 {
		o.MaxPageBytes = DefaultMaxPageBytes
	}
	return &Source{
		pages:    pages,
		opts:     o,
		refused:  registerRefused(o.Registerer),
		slots:    make(chan struct{}, o.Concurrency),
		reads:    map[string]*read{},
		state:    map[string]map[metrics.Key]*containerState{},
		tooLarge: map[string]bool{},
	}
}

// registerRefused is the counter of pages refused for their size, in reg
// when it is set; several sources in one process (the tests' managers)
// share one.
func registerRefused(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tailor_kubelet_pages_refused_total",
		Help: "Kubelet metrics pages refused unread for being larger than --kubelet-max-page-bytes, by page (resource, cadvisor); a resource page refused holds the node's containers (reason TooLarge), a cadvisor page their throttling figures, until its pages fit.",
	}, []string{"page"})
	if reg == nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing
			}
		}
	}
	return c
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
			for _, c := range podcontainers.Names(p) {
				key := metrics.Key{Namespace: p.Namespace, Pod: p.Name, Container: c}
				if pg.err != nil {
					bad := metrics.Unusable(pg.reason, pg.err.Error())
					readings[key] = metrics.Reading{CPU: bad, Memory: bad}
					continue
				}
				readings[key] = s.reading(node, key, pg.resource, pg.cadvisor)
				if pg.cadvisorErr != nil {
					r := readings[key]
					r.Throttled = metrics.Unusable(pg.cadvisorReason, pg.cadvisorErr.Error())
					readings[key] = r
				}
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

// getPage reads one metrics page of node (page is resource or cadvisor);
// the reason says how a failure should be reported for its containers.
func (s *Source) getPage(ctx context.Context, node, page string, names ...string) (scrape, metrics.Reason, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	path := "metrics/" + page
	body, err := s.pages.Open(ctx, node, path)
	if err != nil {
		return nil, metrics.ReasonMissing, err
	}
	defer func() { _ = body.Close() }()
	in := &capped{r: io.LimitedReader{R: body, N: s.opts.MaxPageBytes + 1}}
	sc, err := parse(in, s.opts.Namespaces, names...)
	switch {
	case in.over:
		s.refuse(ctx, node, page)
		return nil, metrics.ReasonTooLarge, fmt.Errorf("node %s %s: the page is larger than %d bytes, refused unread (raise --kubelet-max-page-bytes if the node runs that many containers)",
			node, path, s.opts.MaxPageBytes)
	case in.err != nil:
		return nil, metrics.ReasonMissing, fmt.Errorf("read %s of node %s: %w", path, node, in.err)
	case err != nil:
		return nil, metrics.ReasonMalformed, fmt.Errorf("node %s %s: %w", node, path, err)
	}
	s.fits(node, page)
	return sc, "", nil
}

// refuse counts a page refused for its size and logs it, once until it
// fits again: a node over the cap stays over it for many reads, and the
// containers it holds say so at every sync.
func (s *Source) refuse(ctx context.Context, node, page string) {
	s.refused.WithLabelValues(page).Inc()
	s.mu.Lock()
	logged := s.tooLarge[node+" "+page]
	s.tooLarge[node+" "+page] = true
	s.mu.Unlock()
	if !logged {
		logr.FromContextOrDiscard(ctx).Info("kubelet metrics page larger than the cap: refused unread, the node's containers are held until it fits (raise --kubelet-max-page-bytes if the node runs that many containers)",
			"node", node, "page", "metrics/"+page, "maxPageBytes", s.opts.MaxPageBytes)
	}
}

// fits forgets that node's page was refused, so that a later refusal is
// logged again.
func (s *Source) fits(node, page string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tooLarge, node+" "+page)
}

// capped reads a page through r, a LimitedReader of the cap plus one byte:
// reading that byte means the page is over the cap, and the read stops
// there with over set. err keeps an error of the page's own reader (a
// timeout, a connection reset), which is not the page's fault.
type capped struct {
	r    io.LimitedReader
	over bool
	err  error
}

// errOverCap ends the read of a page over the cap.
var errOverCap = errors.New("page over the cap")

func (c *capped) Read(p []byte) (int, error) {
	if c.over {
		return 0, errOverCap
	}
	n, err := c.r.Read(p)
	if c.r.N == 0 {
		c.over = true
		return n, errOverCap
	}
	if err != nil && !errors.Is(err, io.EOF) {
		c.err = err
	}
	return n, err
}

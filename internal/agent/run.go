package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/tailorhq/tailor/internal/agent/cgroup"
	"github.com/tailorhq/tailor/internal/agent/javaheap"
	"github.com/tailorhq/tailor/internal/agent/report"
)

// Managers says where the managers take reports: base URLs, one per
// manager replica (every shard, leader or standby, keeps its own view).
type Managers interface {
	URLs() []string
}

// StaticManagers is a fixed list of base URLs.
type StaticManagers []string

func (s StaticManagers) URLs() []string { return s }

// Options configure Run.
type Options struct {
	Tree cgroup.Tree
	// Interval is how often every container's cgroup is read.
	Interval time.Duration
	// ReportEvery is how often a report is pushed when nothing is urgent.
	ReportEvery time.Duration
	Thresholds  Thresholds
	// TokenFile holds the projected service-account token (audience
	// report.Audience) sent with each push; the kubelet rotates it, so it
	// is read for each push.
	TokenFile string
	Managers  Managers
	// Trust gives the client the pushes are sent with, verifying the
	// managers' certificate; there is none, and no push, until it has
	// their CA bundle.
	Trust   *Trust
	Clock   clock.WithTicker
	Log     logr.Logger
	Metrics *Metrics
	// Ticked, if set, is told when each read of the cgroups succeeded
	// (the health probe).
	Ticked func(time.Time)
	// JVM, if set, reads the containers' JVMs into each report before it
	// is pushed, and moves their soft heap bounds (--jvm).
	JVM *javaheap.Watcher
}

// Run samples and pushes until ctx ends. A tick that overruns its interval
// drops the ticks it overran (time.Ticker's), so a slow node is sampled
// less often, never piled up.
func Run(ctx context.Context, o Options) error {
	if o.Interval <= 0 || o.ReportEvery < o.Interval {
		return fmt.Errorf("interval %s and report interval %s: want 0 < interval <= report interval", o.Interval, o.ReportEvery)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	col := NewCollector(o.Thresholds)
	rd := newReader(o.Tree)
	defer rd.close()
	tick := o.Clock.NewTicker(o.Interval)
	defer tick.Stop()
	var lastPush time.Time
	retries := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C():
		}
		start := o.Clock.Now()
		urgent, err := rd.sample(col, start)
		o.Metrics.sampleSeconds.Observe(o.Clock.Since(start).Seconds())
		o.Metrics.containers.Set(float64(col.Len()))
		if err != nil {
			o.Log.Error(err, "reading the pods' cgroups")
			continue
		}
		if o.Ticked != nil {
			o.Ticked(start)
		}
		if !urgent && !lastPush.IsZero() && start.Sub(lastPush) < o.ReportEvery {
			continue
		}
		r := col.Report()
		if o.JVM != nil {
			o.JVM.Observe(ctx, start, &r, rd.containers)
		}
		if r.Urgent {
			o.Metrics.urgent.Inc()
			for _, c := range r.Containers {
				if c.Urgent != "" {
					o.Log.V(1).Info("urgent", "pod", c.PodUID, "container", c.ID, "why", c.Urgent)
				}
			}
		}
		lastPush = start
		failed := push(ctx, o, &r)
		switch {
		case failed && r.Urgent && retries < maxUrgentRetries:
			col.Unsent(&r)
			retries++
		case !failed:
			retries = 0
		}
	}
}

// maxUrgentRetries bounds how many samples in a row push an urgent report
// again because a manager did not take it (down, restarting, its
// TokenReview failing): a few seconds covers a blip, and past that the
// cooldown paces the wake-ups as usual.
const maxUrgentRetries = 3

// reader reads the node's containers, keeping each one's files open
// between ticks.
type reader struct {
	tree    cgroup.Tree
	handles map[string]*cgroup.Handle // by container ID
	// containers are the containers the last sample read, by ID.
	containers map[string]cgroup.Container
	buf        []byte
}

func newReader(tree cgroup.Tree) *reader {
	return &reader{tree: tree, handles: map[string]*cgroup.Handle{}, containers: map[string]cgroup.Container{}, buf: cgroup.NewBuffer()}
}

// sample reads every container's cgroup once. A container whose cgroup
// went away between the listing and the read is left out (it is gone).
func (rd *reader) sample(col *Collector, now time.Time) (bool, error) {
	list, err := rd.tree.List()
	if err != nil {
		return false, err
	}
	containers := make([]cgroup.Container, 0, len(list))
	samples := make([]cgroup.Sample, 0, len(list))
	seen := make(map[string]bool, len(list))
	for _, c := range list {
		seen[c.ID] = true
		h := rd.handles[c.ID]
		if h == nil {
			if h, err = rd.tree.Open(c, rd.buf); err != nil {
				continue
			}
			rd.handles[c.ID] = h
		}
		s, err := h.Read()
		if err != nil {
			h.Close()
			delete(rd.handles, c.ID)
			continue
		}
		containers = append(containers, c)
		samples = append(samples, s)
	}
	for id, h := range rd.handles {
		if !seen[id] {
			h.Close()
			delete(rd.handles, id)
		}
	}
	clear(rd.containers)
	for _, c := range containers {
		rd.containers[c.ID] = c
	}
	return col.Observe(now, containers, samples), nil
}

func (rd *reader) close() {
	for id, h := range rd.handles {
		h.Close()
		delete(rd.handles, id)
	}
}

// push sends r to every manager at once and says whether any did not take
// it. A manager that missed it gets the next (each report holds every
// container's newest figures, so figures need no resending; only an urgent
// report's wake-up does, which Run sees to).
func push(ctx context.Context, o Options, r *report.Report) bool {
	body, err := json.Marshal(r)
	if err != nil {
		o.Log.Error(err, "encoding a report")
		return true
	}
	client, err := o.Trust.Client()
	if err != nil {
		o.Metrics.pushes.WithLabelValues("no-ca").Inc()
		o.Log.Info("no report sent: waiting for the managers' CA bundle (their ConfigMap not published or not listed yet)", "why", err.Error())
		return true
	}
	token, err := os.ReadFile(o.TokenFile)
	if err != nil {
		o.Metrics.pushes.WithLabelValues("no-token").Inc()
		o.Log.Error(err, "reading the service-account token; no report sent")
		return true
	}
	urls := o.Managers.URLs()
	if len(urls) == 0 {
		o.Metrics.pushes.WithLabelValues("no-manager").Inc()
		o.Log.Info("no manager to report to yet (none ready behind the Service, or its endpoints not listed yet)", "managers", o.Managers)
		return true
	}
	var wg sync.WaitGroup
	var failed atomic.Bool
	for _, base := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := pushTo(ctx, client, base, strings.TrimSpace(string(token)), body)
			if err != nil {
				failed.Store(true)
				o.Metrics.pushes.WithLabelValues("error").Inc()
				o.Log.V(1).Info("push failed", "manager", base, "urgent", r.Urgent, "error", err.Error())
				return
			}
			o.Metrics.pushes.WithLabelValues("ok").Inc()
		}()
	}
	wg.Wait()
	return failed.Load()
}

// pushTo sends the report, with the token, to base: an https URL only.
// A manager answers 204; a body it may send with a 200 is not read, so
// that an agent keeps working beside a manager newer than itself.
func pushTo(ctx context.Context, c *http.Client, base, token string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+report.Path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if req.URL.Scheme != "https" {
		return fmt.Errorf("refusing to send the token to %s: not https", base)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusOK {
		return nil
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(msg)))
}

// Metrics are the agent's own Prometheus metrics.
type Metrics struct {
	sampleSeconds prometheus.Histogram
	containers    prometheus.Gauge
	pushes        *prometheus.CounterVec
	urgent        prometheus.Counter
}

// NewMetrics registers the agent's metrics with reg (nil: none).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		sampleSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tailor_agent_sample_seconds", Help: "Time to read every pod container's cgroup once.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1},
		}),
		containers: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tailor_agent_containers", Help: "Pod containers on this node the agent reads."}),
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tailor_agent_pushes_total", Help: "Reports pushed to a manager, by result (ok, error, no-token, no-manager, no-ca).",
		}, []string{"result"}),
		urgent: prometheus.NewCounter(prometheus.CounterOpts{Name: "tailor_agent_urgent_reports_total", Help: "Reports pushed early because a container crossed an urgent threshold."}),
	}
	if reg != nil {
		reg.MustRegister(m.sampleSeconds, m.containers, m.pushes, m.urgent)
	}
	return m
}

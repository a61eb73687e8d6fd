package kubelet_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/metrics/kubelet"
	"github.com/tailorhq/tailor/test/builder"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// resource is a /metrics/resource page as the kubelet writes it, for
// container ns/web/app measured at `at`.
func resource(cpuSeconds float64, memory string, at time.Time) string {
	ms := at.UnixMilli()
	return fmt.Sprintf(`# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",namespace="ns",pod="web"} %v %d
# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="app",namespace="ns",pod="web"} %s %d
# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 4585.2 %d
# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in core-seconds
# TYPE pod_cpu_usage_seconds_total counter
pod_cpu_usage_seconds_total{namespace="ns",pod="web"} %v %d
`, cpuSeconds, ms, memory, ms, ms, cpuSeconds, ms)
}

// cadvisor is the CFS part of a /metrics/cadvisor page, with the pod cgroup's
// own series (container="") that must not be taken for the container's.
func cadvisor(throttled, periods float64, at time.Time) string {
	ms := at.UnixMilli()
	return fmt.Sprintf(`# HELP container_cpu_cfs_periods_total Number of elapsed enforcement period intervals.
# TYPE container_cpu_cfs_periods_total counter
container_cpu_cfs_periods_total{container="",id="/kubepods/burstable/pod1",image="",name="",namespace="ns",pod="web"} 99999 %d
container_cpu_cfs_periods_total{container="app",id="/kubepods/burstable/pod1/abc",image="loadgen",name="abc",namespace="ns",pod="web"} %v %d
# HELP container_cpu_cfs_throttled_periods_total Number of throttled period intervals.
# TYPE container_cpu_cfs_throttled_periods_total counter
container_cpu_cfs_throttled_periods_total{container="",id="/kubepods/burstable/pod1",image="",name="",namespace="ns",pod="web"} 99999 %d
container_cpu_cfs_throttled_periods_total{container="app",id="/kubepods/burstable/pod1/abc",image="loadgen",name="abc",namespace="ns",pod="web"} %v %d
`, ms, periods, ms, ms, throttled, ms)
}

// step is one sync: what the node proxy serves and what the clock says.
type step struct {
	now      time.Time
	resource string
	cadvisor string
	status   int
	// hang: the node never answers (a kubelet stopped with SIGSTOP); the
	// request waits until its client gives up.
	hang bool
}

// fakeProxy serves /api/v1/nodes/<node>/proxy/metrics/{resource,cadvisor}
// from the current step of each node, counting what it is asked.
type fakeProxy struct {
	// delay keeps each request this long, so concurrent callers overlap.
	delay time.Duration
	// hold keeps each request until that many are in flight at once (or,
	// once, 2s pass), so a test sees a concurrency bound reached, not hoped
	// for.
	hold int

	mu          sync.Mutex
	steps       map[string]step
	gets        map[string]int // by "node page", e.g. "n1 resource"
	inFlight    int
	maxInFlight int
	reached     chan struct{}
	// arrived, when set, receives each request's "node page" as it comes in.
	arrived chan string
}

func (f *fakeProxy) set(steps map[string]step) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.steps = steps
}

// counts returns the requests served so far, by "node page".
func (f *fakeProxy) counts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.gets {
		out[k] = v
	}
	return out
}

func (f *fakeProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/api/v1/nodes/"), "/")
	if len(parts) != 4 || parts[1] != "proxy" || parts[2] != "metrics" {
		http.Error(w, "unexpected path "+r.URL.Path, http.StatusNotFound)
		return
	}
	f.mu.Lock()
	if f.gets == nil {
		f.gets = map[string]int{}
		f.reached = make(chan struct{})
	}
	f.gets[parts[0]+" "+parts[3]]++
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	if f.hold > 0 && f.inFlight >= f.hold {
		select {
		case <-f.reached:
		default:
			close(f.reached)
		}
	}
	st, ok := f.steps[parts[0]]
	reached, arrived := f.reached, f.arrived
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	if arrived != nil {
		arrived <- parts[0] + " " + parts[3]
	}
	if f.hold > 0 {
		select {
		case <-reached:
		case <-time.After(2 * time.Second):
			// Never reached: let everything through, once.
			f.mu.Lock()
			select {
			case <-f.reached:
			default:
				close(f.reached)
			}
			f.mu.Unlock()
		}
	}
	time.Sleep(f.delay)
	if st.hang {
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
		return
	}

	if !ok {
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"nodes \"`+parts[0]+`\" not found","reason":"NotFound","code":404}`, http.StatusNotFound)
		return
	}
	if st.status != 0 {
		http.Error(w, "Error trying to reach service: dial tcp 10.0.0.1:10250: connect: connection refused", st.status)
		return
	}
	body := st.resource
	if parts[3] == "cadvisor" {
		body = st.cadvisor
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write([]byte(body))
}

func ptr(v float64) *float64 { return &v }

func TestUsage(t *testing.T) {
	pod := builder.Pod("web").Namespace("ns").Node("n1").Container(builder.Container("app")).Running().Obj()
	app := metrics.Key{Namespace: "ns", Pod: "web", Container: "app"}
	mem := "1.048576e+08"

	cases := map[string]struct {
		throttling   bool
		namespaces   func(string) bool
		pods         []*corev1.Pod
		steps        []map[string]step // per sync, per node
		wantUsage    map[metrics.Key]metrics.Usage
		wantProblems []metrics.Problem
		wantErr      string
	}{
		"first scrape: warming up, not zero": {
			steps:     []map[string]step{{"n1": {now: t0, resource: resource(100, mem, t0)}}},
			wantUsage: map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricCPU, Reason: metrics.ReasonWarmingUp,
				Detail: "first sample of the CPU usage counter; a rate needs two"}},
		},
		"two samples 10s apart give the rate over that window": {
			steps: []map[string]step{
				{"n1": {now: t0, resource: resource(100, mem, t0)}},
				{"n1": {now: t0.Add(11 * time.Second), resource: resource(105, mem, t0.Add(10*time.Second))}},
			},
			wantUsage: map[metrics.Key]metrics.Usage{app: {Key: app, Time: t0.Add(10 * time.Second), Window: 10 * time.Second, CPU: 0.5, Memory: 100 << 20}},
		},
		"kubelet serving the same sample again: still warming up": {
			steps: []map[string]step{
				{"n1": {now: t0, resource: resource(100, mem, t0)}},
				{"n1": {now: t0.Add(2 * time.Second), resource: resource(100, mem, t0)}},
			},
			wantUsage: map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricCPU, Reason: metrics.ReasonWarmingUp,
				Detail: "the kubelet has not refreshed the CPU usage counter since the first sample"}},
		},
		"same sample after a rate: the rate is kept, dated by its sample": {
			steps: []map[string]step{
				{"n1": {now: t0, resource: resource(100, mem, t0)}},
				{"n1": {now: t0.Add(10 * time.Second), resource: resource(102, mem, t0.Add(10*time.Second))}},
				{"n1": {now: t0.Add(15 * time.Second), resource: resource(102, mem, t0.Add(10*time.Second))}},
			},
			wantUsage: map[metrics.Key]metrics.Usage{app: {Key: app, Time: t0.Add(10 * time.Second), Window: 10 * time.Second, CPU: 0.2, Memory: 100 << 20}},
		},
		"kept rate goes stale when the kubelet stops refreshing": {
			steps: []map[string]step{
				{"n1": {now: t0, resource: resource(100, mem, t0)}},
				{"n1": {now: t0.Add(10 * time.Second), resource: resource(102, mem, t0.Add(10*time.Second))}},
				{"n1": {now: t0.Add(5 * time.Minute), resource: resource(102, mem, t0.Add(10*time.Second))}},
			},
			wantUsage: map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{
				{Key: app, Metric: metrics.MetricCPU, Reason: metrics.ReasonStale, Detail: "measured at 2026-11-21T12:00:10Z, 4m50s before now, more than the 1m0s allowed"},
				{Key: app, Metric: metrics.MetricMemory, Reason: metrics.ReasonStale, Detail: "measured at 2026-11-21T12:00:10Z, 4m50s before now, more than the 1m0s allowed"},
			},
		},
		"counter going back (restart) starts over": {
			steps: []map[string]step{
				{"n1": {now: t0, resource: resource(100, mem, t0)}},
				{"n1": {now: t0.Add(10 * time.Second), resource: resource(3, mem, t0.Add(10*time.Second))}},
			},
			wantUsage: map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricCPU, Reason: metrics.ReasonWarmingUp,
				Detail: "the CPU usage counter went back from 100 to 3 (container restarted); a rate needs two samples"}},
		},
		"NaN working set is invalid": {
			steps: []map[string]step{
				{"n1": {now: t0, resource: resource(100, "NaN", t0)}},
				{"n1": {now: t0.Add(10 * time.Second), resource: resource(105, "NaN", t0.Add(10*time.Second))}},
			},
			wantUsage:    map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricMemory, Reason: metrics.ReasonInvalid, Detail: "value NaN"}},
		},
		"container absent from the page": {
			steps:     []map[string]step{{"n1": {now: t0, resource: "# nothing yet\n"}}},
			wantUsage: map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{
				{Key: app, Metric: metrics.MetricCPU, Reason: metrics.ReasonMissing, Detail: "the kubelet reports no container_cpu_usage_seconds_total for this container"},
				{Key: app, Metric: metrics.MetricMemory, Reason: metrics.ReasonMissing, Detail: "the kubelet reports no container_memory_working_set_bytes for this container"},
			},
		},
		"throttling from cAdvisor counters, pod cgroup ignored": {
			throttling: true,
			steps: []map[string]step{
				{"n1": {now: t0, resource: resource(100, mem, t0), cadvisor: cadvisor(10, 100, t0)}},
				{"n1": {now: t0.Add(10 * time.Second), resource: resource(105, mem, t0.Add(10*time.Second)), cadvisor: cadvisor(90, 200, t0.Add(10*time.Second))}},
			},
			wantUsage: map[metrics.Key]metrics.Usage{app: {Key: app, Time: t0.Add(10 * time.Second), Window: 10 * time.Second, CPU: 0.5, Memory: 100 << 20, Throttled: ptr(0.8), ThrottledSince: t0}},
		},
		// The two pages are read a moment apart, and cAdvisor may refresh
		// in between: the second read's cadvisor page is a sample ahead of
		// its resource page, and the third read's is that sample again, so
		// the CPU rate the third read gives spans t0 to t0+10s while the
		// throttled fraction it keeps spans t0-10s to t0+10s.
		"pages straddling a cAdvisor refresh: throttling dated by its own samples": {
			throttling: true,
			steps: []map[string]step{
				{"n1": {now: t0.Add(-9 * time.Second), resource: resource(95, mem, t0.Add(-10*time.Second)), cadvisor: cadvisor(10, 100, t0.Add(-10*time.Second))}},
				{"n1": {now: t0.Add(time.Second), resource: resource(100, mem, t0), cadvisor: cadvisor(90, 200, t0.Add(10*time.Second))}},
				{"n1": {now: t0.Add(11 * time.Second), resource: resource(105, mem, t0.Add(10*time.Second)), cadvisor: cadvisor(90, 200, t0.Add(10*time.Second))}},
			},
			wantUsage: map[metrics.Key]metrics.Usage{app: {Key: app, Time: t0.Add(10 * time.Second), Window: 10 * time.Second, CPU: 0.5, Memory: 100 << 20,
				Throttled: ptr(0.8), ThrottledSince: t0.Add(-10 * time.Second)}},
		},
		"throttling warming up does not hold CPU and memory": {
			throttling: true,
			steps: []map[string]step{
				{"n1": {now: t0, resource: resource(100, mem, t0), cadvisor: "# no CFS yet\n"}},
				{"n1": {now: t0.Add(10 * time.Second), resource: resource(105, mem, t0.Add(10*time.Second)), cadvisor: cadvisor(90, 200, t0.Add(10*time.Second))}},
			},
			wantUsage: map[metrics.Key]metrics.Usage{app: {Key: app, Time: t0.Add(10 * time.Second), Window: 10 * time.Second, CPU: 0.5, Memory: 100 << 20}},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricThrottling, Reason: metrics.ReasonWarmingUp,
				Detail: "first sample of the CFS period counters; a fraction needs two"}},
		},
		"one node unreachable holds only its containers": {
			pods: []*corev1.Pod{pod, builder.Pod("db").Namespace("ns").Node("n2").Container(builder.Container("app")).Running().Obj()},
			steps: []map[string]step{
				{"n1": {now: t0, resource: resource(100, mem, t0)}, "n2": {status: http.StatusServiceUnavailable}},
				{"n1": {now: t0.Add(10 * time.Second), resource: resource(105, mem, t0.Add(10*time.Second))}, "n2": {status: http.StatusServiceUnavailable}},
			},
			wantUsage: map[metrics.Key]metrics.Usage{app: {Key: app, Time: t0.Add(10 * time.Second), Window: 10 * time.Second, CPU: 0.5, Memory: 100 << 20}},
			wantProblems: []metrics.Problem{
				{Key: metrics.Key{Namespace: "ns", Pod: "db", Container: "app"}, Metric: metrics.MetricCPU, Reason: metrics.ReasonMissing,
					Detail: "read metrics/resource of node n2 through the apiserver proxy: the server is currently unable to handle the request (get nodes n2)"},
				{Key: metrics.Key{Namespace: "ns", Pod: "db", Container: "app"}, Metric: metrics.MetricMemory, Reason: metrics.ReasonMissing,
					Detail: "read metrics/resource of node n2 through the apiserver proxy: the server is currently unable to handle the request (get nodes n2)"},
			},
		},
		"garbage page on one node is malformed": {
			pods: []*corev1.Pod{pod, builder.Pod("db").Namespace("ns").Node("n2").Container(builder.Container("app")).Running().Obj()},
			steps: []map[string]step{
				{"n1": {now: t0, resource: resource(100, mem, t0)}, "n2": {resource: "<html>oops</html>"}},
			},
			wantUsage: map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{
				{Key: metrics.Key{Namespace: "ns", Pod: "db", Container: "app"}, Metric: metrics.MetricCPU, Reason: metrics.ReasonMalformed,
					Detail: `node n2 metrics/resource: parse metrics text: text format parsing error in line 1: invalid metric name`},
				{Key: metrics.Key{Namespace: "ns", Pod: "db", Container: "app"}, Metric: metrics.MetricMemory, Reason: metrics.ReasonMalformed,
					Detail: `node n2 metrics/resource: parse metrics text: text format parsing error in line 1: invalid metric name`},
				{Key: app, Metric: metrics.MetricCPU, Reason: metrics.ReasonWarmingUp, Detail: "first sample of the CPU usage counter; a rate needs two"},
			},
		},
		"a shard keeps only its own namespaces' figures": {
			namespaces: func(ns string) bool { return ns == "other-team" },
			steps: []map[string]step{
				{"n1": {now: t0, resource: resource(100, mem, t0)}},
				{"n1": {now: t0.Add(11 * time.Second), resource: resource(105, mem, t0.Add(10*time.Second))}},
			},
			wantUsage: map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{
				{Key: app, Metric: metrics.MetricCPU, Reason: metrics.ReasonMissing, Detail: "the kubelet reports no container_cpu_usage_seconds_total for this container"},
				{Key: app, Metric: metrics.MetricMemory, Reason: metrics.ReasonMissing, Detail: "the kubelet reports no container_memory_working_set_bytes for this container"},
			},
		},
		"every node unreachable is the source's error": {
			steps:   []map[string]step{{"n1": {status: http.StatusBadGateway}}},
			wantErr: "read metrics/resource of node n1 through the apiserver proxy",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			proxy := &fakeProxy{}
			srv := httptest.NewServer(proxy)
			defer srv.Close()
			cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			clk := clocktesting.NewFakePassiveClock(t0)
			src := kubelet.New(kubelet.NewAPIServerProxy(cs.CoreV1().RESTClient()), kubelet.Options{Throttling: tc.throttling, MaxAge: time.Minute, Clock: clk, Namespaces: tc.namespaces})
			pods := tc.pods
			if pods == nil {
				pods = []*corev1.Pod{pod}
			}
			var got metrics.Result
			for _, st := range tc.steps {
				proxy.set(st)
				if n1, ok := st["n1"]; ok && !n1.now.IsZero() {
					clk.SetTime(n1.now)
				}
				got, err = src.Usage(context.Background(), pods)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Usage: %v", err)
			}
			if diff := cmp.Diff(tc.wantUsage, got.Usage); diff != "" {
				t.Errorf("usage (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantProblems, got.Problems); diff != "" {
				t.Errorf("problems (-want,+got):\n%s", diff)
			}
		})
	}
}

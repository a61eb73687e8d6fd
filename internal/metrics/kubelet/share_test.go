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

// resourcePage is a /metrics/resource page with container "app" of each of
// pods (in namespace ns), all at cpuSeconds and 100Mi, measured at `at`.
func resourcePage(cpuSeconds float64, at time.Time, pods ...string) string {
	ms := at.UnixMilli()
	var b strings.Builder
	b.WriteString("# TYPE container_cpu_usage_seconds_total counter\n")
	for _, p := range pods {
		fmt.Fprintf(&b, "container_cpu_usage_seconds_total{container=\"app\",namespace=\"ns\",pod=%q} %v %d\n", p, cpuSeconds, ms)
	}
	b.WriteString("# TYPE container_memory_working_set_bytes gauge\n")
	for _, p := range pods {
		fmt.Fprintf(&b, "container_memory_working_set_bytes{container=\"app\",namespace=\"ns\",pod=%q} 1.048576e+08 %d\n", p, ms)
	}
	return b.String()
}

// cadvisorPage is the CFS part of a /metrics/cadvisor page for the same
// containers.
func cadvisorPage(throttled, periods float64, at time.Time, pods ...string) string {
	ms := at.UnixMilli()
	var b strings.Builder
	b.WriteString("# TYPE container_cpu_cfs_periods_total counter\n")
	for _, p := range pods {
		fmt.Fprintf(&b, "container_cpu_cfs_periods_total{container=\"app\",namespace=\"ns\",pod=%q} %v %d\n", p, periods, ms)
	}
	b.WriteString("# TYPE container_cpu_cfs_throttled_periods_total counter\n")
	for _, p := range pods {
		fmt.Fprintf(&b, "container_cpu_cfs_throttled_periods_total{container=\"app\",namespace=\"ns\",pod=%q} %v %d\n", p, throttled, ms)
	}
	return b.String()
}

// policyPods is one policy's pods: <prefix>-<node> on each node.
func policyPods(prefix string, nodes ...string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, n := range nodes {
		out = append(out, builder.Pod(prefix+"-"+n).Namespace("ns").Node(n).Container(builder.Container("app")).Running().Obj())
	}
	return out
}

// nodePages serves, on each of nodes, the pods of every prefix, with the
// counters at cpuSeconds, throttled and periods, measured at `at`.
func nodePages(at time.Time, cpuSeconds, throttled, periods float64, prefixes []string, nodes ...string) map[string]step {
	out := map[string]step{}
	for _, n := range nodes {
		var pods []string
		for _, p := range prefixes {
			pods = append(pods, p+"-"+n)
		}
		out[n] = step{resource: resourcePage(cpuSeconds, at, pods...), cadvisor: cadvisorPage(throttled, periods, at, pods...)}
	}
	return out
}

// firstSample is what policyPods(prefix, nodes...) get from their first
// read: CPU warming up (which holds the pod, so throttling says nothing).
func firstSample(prefix string, nodes ...string) []metrics.Problem {
	var out []metrics.Problem
	for _, n := range nodes {
		out = append(out, metrics.Problem{Key: metrics.Key{Namespace: "ns", Pod: prefix + "-" + n, Container: "app"}, Metric: metrics.MetricCPU,
			Reason: metrics.ReasonWarmingUp, Detail: "first sample of the CPU usage counter; a rate needs two"})
	}
	return out
}

func newSource(t testing.TB, proxy http.Handler, o kubelet.Options) *kubelet.Source {
	t.Helper()
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	return kubelet.New(kubelet.NewAPIServerProxy(cs.CoreV1().RESTClient()), o)
}

var threeNodes = []string{"n1", "n2", "n3"}

// everyPage is want for requests: n of each page of each node.
func everyPage(n int, nodes ...string) map[string]int {
	out := map[string]int{}
	for _, node := range nodes {
		out[node+" resource"] = n
		out[node+" cadvisor"] = n
	}
	return out
}

func TestUsageSharesReadsAcrossPolicies(t *testing.T) {
	cases := map[string]struct {
		shareFor time.Duration
		// between is how long after the first policy the second is synced.
		between  time.Duration
		wantGets map[string]int
	}{
		"within the share window: each node read once": {
			between:  kubelet.DefaultShareFor - time.Second,
			wantGets: everyPage(1, threeNodes...),
		},
		"once the window has passed: read again": {
			between:  kubelet.DefaultShareFor,
			wantGets: everyPage(2, threeNodes...),
		},
		"sharing off: read for each policy": {
			shareFor: -1,
			wantGets: everyPage(2, threeNodes...),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			proxy := &fakeProxy{}
			clk := clocktesting.NewFakePassiveClock(t0)
			src := newSource(t, proxy, kubelet.Options{Throttling: true, ShareFor: tc.shareFor, Clock: clk})
			proxy.set(nodePages(t0, 100, 10, 100, []string{"a", "b"}, threeNodes...))

			for i, policy := range []string{"a", "b"} {
				if i > 0 {
					clk.SetTime(t0.Add(tc.between))
				}
				got, err := src.Usage(context.Background(), policyPods(policy, threeNodes...))
				if err != nil {
					t.Fatalf("Usage of policy %s: %v", policy, err)
				}
				// Each container's first sample, whichever read it came from.
				if diff := cmp.Diff(firstSample(policy, threeNodes...), got.Problems); diff != "" {
					t.Errorf("policy %s: problems (-want,+got):\n%s", policy, diff)
				}
			}
			if diff := cmp.Diff(tc.wantGets, proxy.counts()); diff != "" {
				t.Errorf("requests by node and page (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestUsageConcurrentCallersShareOneRead(t *testing.T) {
	const policies = 10
	proxy := &fakeProxy{delay: 20 * time.Millisecond}
	src := newSource(t, proxy, kubelet.Options{Throttling: true, Clock: clocktesting.NewFakePassiveClock(t0)})
	var prefixes []string
	for i := range policies {
		prefixes = append(prefixes, fmt.Sprintf("p%d", i))
	}
	proxy.set(nodePages(t0, 100, 10, 100, prefixes, threeNodes...))

	errs := make([]error, policies)
	results := make([]metrics.Result, policies)
	var wg sync.WaitGroup
	for i, prefix := range prefixes {
		wg.Go(func() {
			results[i], errs[i] = src.Usage(context.Background(), policyPods(prefix, threeNodes...))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Usage of policy %s: %v", prefixes[i], err)
		}
		if diff := cmp.Diff(firstSample(prefixes[i], threeNodes...), results[i].Problems); diff != "" {
			t.Errorf("policy %s: problems (-want,+got):\n%s", prefixes[i], diff)
		}
	}
	if diff := cmp.Diff(everyPage(1, threeNodes...), proxy.counts()); diff != "" {
		t.Errorf("requests by node and page (-want,+got):\n%s", diff)
	}
}

func TestUsageFailedNodeIsReadAgainAfterTheWindow(t *testing.T) {
	proxy := &fakeProxy{}
	clk := clocktesting.NewFakePassiveClock(t0)
	src := newSource(t, proxy, kubelet.Options{Clock: clk})
	pods := policyPods("a", "n1", "n2")
	db := metrics.Key{Namespace: "ns", Pod: "a-n2", Container: "app"}
	down := "read metrics/resource of node n2 through the apiserver proxy: the server is currently unable to handle the request (get nodes n2)"
	up := nodePages(t0, 100, 0, 0, []string{"a"}, "n1", "n2")

	steps := []struct {
		at           time.Time
		n2Down       bool
		wantGets     map[string]int
		wantProblems []metrics.Problem
	}{{
		at:       t0,
		n2Down:   true,
		wantGets: map[string]int{"n1 resource": 1, "n2 resource": 1},
		wantProblems: []metrics.Problem{
			{Key: metrics.Key{Namespace: "ns", Pod: "a-n1", Container: "app"}, Metric: metrics.MetricCPU, Reason: metrics.ReasonWarmingUp, Detail: "first sample of the CPU usage counter; a rate needs two"},
			{Key: db, Metric: metrics.MetricCPU, Reason: metrics.ReasonMissing, Detail: down},
			{Key: db, Metric: metrics.MetricMemory, Reason: metrics.ReasonMissing, Detail: down},
		},
	}, {
		// Within the window the failure is shared, not retried: a dead node
		// costs one timeout per window, not one per policy.
		at:       t0.Add(time.Second),
		wantGets: map[string]int{"n1 resource": 1, "n2 resource": 1},
		wantProblems: []metrics.Problem{
			{Key: metrics.Key{Namespace: "ns", Pod: "a-n1", Container: "app"}, Metric: metrics.MetricCPU, Reason: metrics.ReasonWarmingUp, Detail: "the kubelet has not refreshed the CPU usage counter since the first sample"},
			{Key: db, Metric: metrics.MetricCPU, Reason: metrics.ReasonMissing, Detail: down},
			{Key: db, Metric: metrics.MetricMemory, Reason: metrics.ReasonMissing, Detail: down},
		},
	}, {
		at:       t0.Add(kubelet.DefaultShareFor),
		wantGets: map[string]int{"n1 resource": 2, "n2 resource": 2},
		wantProblems: []metrics.Problem{
			{Key: metrics.Key{Namespace: "ns", Pod: "a-n1", Container: "app"}, Metric: metrics.MetricCPU, Reason: metrics.ReasonWarmingUp, Detail: "the kubelet has not refreshed the CPU usage counter since the first sample"},
			{Key: db, Metric: metrics.MetricCPU, Reason: metrics.ReasonWarmingUp, Detail: "first sample of the CPU usage counter; a rate needs two"},
		},
	}}
	for i, st := range steps {
		pages := map[string]step{"n1": up["n1"], "n2": up["n2"]}
		if st.n2Down {
			pages["n2"] = step{status: http.StatusServiceUnavailable}
		}
		proxy.set(pages)
		clk.SetTime(st.at)
		got, err := src.Usage(context.Background(), pods)
		if err != nil {
			t.Fatalf("step %d: Usage: %v", i, err)
		}
		if diff := cmp.Diff(st.wantProblems, got.Problems); diff != "" {
			t.Errorf("step %d: problems (-want,+got):\n%s", i, diff)
		}
		if diff := cmp.Diff(st.wantGets, proxy.counts()); diff != "" {
			t.Errorf("step %d: requests by node and page (-want,+got):\n%s", i, diff)
		}
	}
}

// A kubelet that hangs costs its own pods their figures after Timeout, not
// the whole read: the other node's pods are measured, and the read returns.
func TestUsageHungNodeTimesOut(t *testing.T) {
	proxy := &fakeProxy{}
	src := newSource(t, proxy, kubelet.Options{Clock: clocktesting.NewFakePassiveClock(t0), Timeout: 200 * time.Millisecond})
	pages := nodePages(t0, 100, 0, 0, []string{"a"}, "n1")
	pages["n2"] = step{hang: true}
	proxy.set(pages)
	start := time.Now()
	got, err := src.Usage(context.Background(), policyPods("a", "n1", "n2"))
	if err != nil {
		t.Fatalf("Usage: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Usage took %s with a 200ms timeout", took)
	}
	hung := metrics.Key{Namespace: "ns", Pod: "a-n2", Container: "app"}
	var reasons []string
	for _, p := range got.Problems {
		if p.Key != hung && p.Reason != metrics.ReasonWarmingUp {
			t.Errorf("the answering node's pod: %s", p)
		}
		if p.Key == hung {
			reasons = append(reasons, string(p.Metric)+" "+string(p.Reason))
			if !strings.Contains(p.Detail, "node n2") || !strings.Contains(p.Detail, "context deadline exceeded") {
				t.Errorf("problem detail %q: want the node and the timeout named", p.Detail)
			}
		}
	}
	if diff := cmp.Diff([]string{"cpu Missing", "memory Missing"}, reasons); diff != "" {
		t.Errorf("problems of the hung node's pod (-want,+got):\n%s", diff)
	}
}

// A caller that gives up on a read it started must not hand its own
// cancellation to the callers waiting on that read.
func TestUsageAbandonedReadIsReadAgainByAWaiter(t *testing.T) {
	proxy := &fakeProxy{delay: 200 * time.Millisecond, arrived: make(chan string, 10)}
	src := newSource(t, proxy, kubelet.Options{Clock: clocktesting.NewFakePassiveClock(t0)})
	proxy.set(nodePages(t0, 100, 0, 0, []string{"a", "b"}, "n1"))

	ctxA, cancelA := context.WithCancel(context.Background())
	errA := make(chan error, 1)
	go func() {
		_, err := src.Usage(ctxA, policyPods("a", "n1"))
		errA <- err
	}()
	<-proxy.arrived // a's read is in flight
	type result struct {
		res metrics.Result
		err error
	}
	doneB := make(chan result, 1)
	go func() {
		res, err := src.Usage(context.Background(), policyPods("b", "n1"))
		doneB <- result{res, err}
	}()
	time.Sleep(50 * time.Millisecond) // let b wait on a's read
	cancelA()
	if err := <-errA; err == nil {
		t.Errorf("Usage of a with its context cancelled: no error")
	}
	b := <-doneB
	if b.err != nil {
		t.Fatalf("Usage of b: %v", b.err)
	}
	want := []metrics.Problem{{Key: metrics.Key{Namespace: "ns", Pod: "b-n1", Container: "app"}, Metric: metrics.MetricCPU, Reason: metrics.ReasonWarmingUp,
		Detail: "first sample of the CPU usage counter; a rate needs two"}}
	if diff := cmp.Diff(want, b.res.Problems); diff != "" {
		t.Errorf("problems of b (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"n1 resource": 2}, proxy.counts()); diff != "" {
		t.Errorf("requests by node and page (-want,+got):\n%s", diff)
	}
}

// Two policies selecting the same pod read the same shared page: the
// second must get the rate the first did, not a zero or "warming up".
func TestUsageSharedSampleGivesEveryCallerTheSameRate(t *testing.T) {
	proxy := &fakeProxy{}
	clk := clocktesting.NewFakePassiveClock(t0)
	src := newSource(t, proxy, kubelet.Options{Throttling: true, Clock: clk})
	pods := policyPods("web", "n1")
	web := metrics.Key{Namespace: "ns", Pod: "web-n1", Container: "app"}

	proxy.set(nodePages(t0, 100, 10, 100, []string{"web"}, "n1"))
	for _, policy := range []string{"a", "b"} {
		if _, err := src.Usage(context.Background(), pods); err != nil {
			t.Fatalf("first sync of policy %s: %v", policy, err)
		}
	}
	later := t0.Add(10 * time.Second)
	clk.SetTime(later)
	proxy.set(nodePages(later, 105, 90, 200, []string{"web"}, "n1"))
	want := map[metrics.Key]metrics.Usage{web: {Key: web, Time: later, Window: 10 * time.Second, CPU: 0.5, Memory: 100 << 20, Throttled: ptr(0.8), ThrottledSince: later.Add(-10 * time.Second)}}
	for _, policy := range []string{"a", "b"} {
		got, err := src.Usage(context.Background(), pods)
		if err != nil {
			t.Fatalf("second sync of policy %s: %v", policy, err)
		}
		if diff := cmp.Diff(want, got.Usage); diff != "" {
			t.Errorf("policy %s: usage (-want,+got):\n%s", policy, diff)
		}
		if len(got.Problems) != 0 {
			t.Errorf("policy %s: problems %+v, want none", policy, got.Problems)
		}
	}
	if diff := cmp.Diff(everyPage(2, "n1"), proxy.counts()); diff != "" {
		t.Errorf("requests by node and page (-want,+got):\n%s", diff)
	}
}

// A container the node stops reporting is forgotten, once per read: when
// it comes back its counter starts over rather than giving a rate across
// the gap.
func TestUsageForgetsContainersTheNodeNoLongerReports(t *testing.T) {
	proxy := &fakeProxy{}
	clk := clocktesting.NewFakePassiveClock(t0)
	src := newSource(t, proxy, kubelet.Options{Clock: clk})
	pods := policyPods("web", "n1")

	for i, st := range []struct {
		cpu     float64
		present bool
	}{{100, true}, {0, false}, {200, true}} {
		at := t0.Add(time.Duration(i) * 10 * time.Second)
		clk.SetTime(at)
		page := resourcePage(0, at, "other")
		if st.present {
			page = resourcePage(st.cpu, at, "web-n1")
		}
		proxy.set(map[string]step{"n1": {resource: page}})
		if _, err := src.Usage(context.Background(), pods); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	got, err := src.Usage(context.Background(), pods) // the last read, shared
	if err != nil {
		t.Fatal(err)
	}
	want := []metrics.Problem{{Key: metrics.Key{Namespace: "ns", Pod: "web-n1", Container: "app"}, Metric: metrics.MetricCPU, Reason: metrics.ReasonWarmingUp,
		Detail: "the kubelet has not refreshed the CPU usage counter since the first sample"}}
	if diff := cmp.Diff(want, got.Problems); diff != "" {
		t.Errorf("problems (-want,+got):\n%s", diff)
	}
}

func TestUsageBoundsReadsInFlight(t *testing.T) {
	cases := map[string]struct {
		concurrency int
		// calls are concurrent Usage calls, each over its own nodes.
		calls        int
		nodesPerCall int
		wantMax      int
	}{
		"one call over many nodes":                   {concurrency: 3, calls: 1, nodesPerCall: 12, wantMax: 3},
		"the bound is the source's, not each call's": {concurrency: 3, calls: 2, nodesPerCall: 6, wantMax: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// Held until the bound is reached, then kept a while so that any
			// reader beyond the bound would overlap them.
			proxy := &fakeProxy{hold: tc.wantMax, delay: 50 * time.Millisecond}
			src := newSource(t, proxy, kubelet.Options{Concurrency: tc.concurrency, Clock: clocktesting.NewFakePassiveClock(t0)})
			var all []string
			calls := make([][]string, tc.calls)
			for c := range tc.calls {
				for n := range tc.nodesPerCall {
					node := fmt.Sprintf("c%d-n%02d", c, n)
					calls[c] = append(calls[c], node)
					all = append(all, node)
				}
			}
			proxy.set(nodePages(t0, 100, 0, 0, []string{"a"}, all...))
			errs := make([]error, tc.calls)
			var wg sync.WaitGroup
			for c, nodes := range calls {
				wg.Go(func() {
					_, errs[c] = src.Usage(context.Background(), policyPods("a", nodes...))
				})
			}
			wg.Wait()
			for c, err := range errs {
				if err != nil {
					t.Fatalf("call %d: %v", c, err)
				}
			}
			proxy.mu.Lock()
			got := proxy.maxInFlight
			proxy.mu.Unlock()
			if got != tc.wantMax {
				t.Errorf("at most %d reads in flight, want %d", got, tc.wantMax)
			}
			if len(proxy.counts()) != len(all) {
				t.Errorf("%d node pages read, want %d", len(proxy.counts()), len(all))
			}
		})
	}
}

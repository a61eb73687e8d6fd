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

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/metrics/kubelet"
)

// pageServer is how a test reaches two nodes' kubelets, n1 and n2, with
// set saying what each serves: directly, or through the apiserver.
type pageServer struct {
	pages kubelet.Pages
	set   func(map[string]step)
}

// bothWays are the two ways the source reads the kubelets.
var bothWays = map[string]func(t *testing.T) pageServer{
	"direct": func(t *testing.T) pageServer {
		ca := newCA(t, "cluster-ca")
		kubelets := map[string]*fakeKubelet{"n1": {token: "t"}, "n2": {token: "t"}}
		n1, n2 := startKubelet(t, kubelets["n1"], ca, nil), startKubelet(t, kubelets["n2"], ca, nil)
		pages, err := kubelet.NewDirect(&rest.Config{BearerToken: "t", TLSClientConfig: rest.TLSClientConfig{CAData: ca.pem}},
			nodeGetter(localNode("n1", n1), localNode("n2", n2)), kubelet.DirectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pageServer{pages: pages, set: func(steps map[string]step) {
			for node, k := range kubelets {
				k.set(steps[node])
			}
		}}
	},
	"apiserver proxy": func(t *testing.T) pageServer {
		proxy := &fakeProxy{}
		srv := httptestServer(t, proxy)
		cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv, QPS: -1})
		if err != nil {
			t.Fatal(err)
		}
		return pageServer{pages: kubelet.NewAPIServerProxy(cs.CoreV1().RESTClient()), set: proxy.set}
	},
}

// logLines records what a logger says.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
	}, funcr.Options{})
}

func (l *logLines) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lines)
}

// refusedPages is tailor_kubelet_pages_refused_total in reg, by page.
func refusedPages(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "tailor_kubelet_pages_refused_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "page" {
					out[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// A page over the cap is refused whichever way it is read and whichever
// page it is, counted each time and logged once until the page fits again.
// A resource page refused holds its node's containers with reason TooLarge
// (the other node's are not); a cadvisor page refused costs them only their
// throttling figures, so that one tenant's containers filling a node's
// cAdvisor page hold no other tenant's usage there.
func TestUsagePageOverTheCap(t *testing.T) {
	const maxPage = 4096
	var fillers []string
	for i := range 40 {
		fillers = append(fillers, fmt.Sprintf("filler-%03d", i))
	}
	big := append([]string{"a-n1"}, fillers...)
	fits := func(at time.Time, node string) step { return nodePages(at, 100, 0, 0, []string{"a"}, node)[node] }
	n1 := metrics.Key{Namespace: "ns", Pod: "a-n1", Container: "app"}
	for _, page := range []string{"resource", "cadvisor"} {
		huge := func(at time.Time) step {
			st := fits(at, "n1")
			if page == "resource" {
				st.resource = resourcePage(100, at, big...)
			} else {
				st.cadvisor = cadvisorPage(0, 0, at, big...)
			}
			return st
		}
		if st := huge(t0); len(st.resource) <= maxPage && len(st.cadvisor) <= maxPage {
			t.Fatalf("the large %s page is not over the cap %d", page, maxPage)
		}
		refused := fmt.Sprintf("node n1 metrics/%s: the page is larger than %d bytes, refused unread (raise --kubelet-max-page-bytes if the node runs that many containers)", page, maxPage)
		tooLarge := []metrics.Problem{
			{Key: n1, Metric: metrics.MetricCPU, Reason: metrics.ReasonTooLarge, Detail: refused},
			{Key: n1, Metric: metrics.MetricMemory, Reason: metrics.ReasonTooLarge, Detail: refused},
		}
		cpuWarming := metrics.Problem{Key: n1, Metric: metrics.MetricCPU, Reason: metrics.ReasonWarmingUp, Detail: "first sample of the CPU usage counter; a rate needs two"}
		afterFit := []metrics.Problem{cpuWarming}
		first := tooLarge
		if page == "cadvisor" {
			tooLarge = []metrics.Problem{{Key: n1, Metric: metrics.MetricThrottling, Reason: metrics.ReasonTooLarge, Detail: refused}}
			// The usage goes on from the resource page (its first read
			// warming up, which says all there is), and only the
			// throttling counters start again once the page fits.
			first = []metrics.Problem{cpuWarming}
			afterFit = []metrics.Problem{{Key: n1, Metric: metrics.MetricThrottling, Reason: metrics.ReasonWarmingUp, Detail: "first sample of the CFS period counters; a fraction needs two"}}
		}
		steps := []struct {
			n1Huge       bool
			wantProblems []metrics.Problem // of n1's pod
			wantRefused  float64
			wantLogs     int
		}{
			{n1Huge: true, wantProblems: first, wantRefused: 1, wantLogs: 1},
			// The next window: refused again, not logged again.
			{n1Huge: true, wantProblems: tooLarge, wantRefused: 2, wantLogs: 1},
			{wantProblems: afterFit, wantRefused: 2, wantLogs: 1},
			// Over the cap again after fitting: logged again.
			{n1Huge: true, wantProblems: tooLarge, wantRefused: 3, wantLogs: 2},
		}
		for way, start := range bothWays {
			t.Run(page+"/"+way, func(t *testing.T) {
				srv := start(t)
				reg := prometheus.NewRegistry()
				clk := clocktesting.NewFakePassiveClock(t0)
				src := kubelet.New(srv.pages, kubelet.Options{Throttling: page == "cadvisor", Clock: clk, MaxPageBytes: maxPage, Registerer: reg})
				logs := &logLines{}
				ctx := logr.NewContext(context.Background(), logs.logger())
				for i, st := range steps {
					at := t0.Add(time.Duration(i) * 10 * time.Second)
					clk.SetTime(at)
					pages := map[string]step{"n1": fits(at, "n1"), "n2": fits(at, "n2")}
					if st.n1Huge {
						pages["n1"] = huge(at)
					}
					srv.set(pages)
					got, err := src.Usage(ctx, policyPods("a", "n1", "n2"))
					if err != nil {
						t.Fatalf("step %d: Usage: %v", i, err)
					}
					var ofN1 []metrics.Problem
					for _, p := range got.Problems {
						switch {
						case p.Key == n1:
							ofN1 = append(ofN1, p)
						case p.Reason != metrics.ReasonWarmingUp:
							t.Errorf("step %d: the other node's pod: %s", i, p)
						}
					}
					if diff := cmp.Diff(st.wantProblems, ofN1); diff != "" {
						t.Errorf("step %d: problems of n1's pod (-want,+got):\n%s", i, diff)
					}
					if diff := cmp.Diff(map[string]float64{page: st.wantRefused}, refusedPages(t, reg)); diff != "" {
						t.Errorf("step %d: pages refused (-want,+got):\n%s", i, diff)
					}
					if got := logs.count(); got != st.wantLogs {
						t.Errorf("step %d: %d log lines, want %d: %q", i, got, st.wantLogs, logs.lines)
					}
				}
			})
		}
	}
}

// The cap is the largest page read: a page of exactly that many bytes is
// read, one byte more is not.
func TestUsagePageAtTheCap(t *testing.T) {
	page := resourcePage(100, t0, "a-n1")
	for name, tc := range map[string]struct {
		maxPage    int64
		wantReason metrics.Reason
	}{
		"exactly the cap": {maxPage: int64(len(page)), wantReason: metrics.ReasonWarmingUp},
		"a byte over":     {maxPage: int64(len(page)) - 1, wantReason: metrics.ReasonTooLarge},
	} {
		for way, start := range bothWays {
			t.Run(name+"/"+way, func(t *testing.T) {
				srv := start(t)
				srv.set(map[string]step{"n1": {resource: page}})
				src := kubelet.New(srv.pages, kubelet.Options{Clock: clocktesting.NewFakePassiveClock(t0), MaxPageBytes: tc.maxPage})
				got, err := src.Usage(context.Background(), policyPods("a", "n1"))
				if tc.wantReason == metrics.ReasonTooLarge {
					// The only node refused: the source's error.
					if err == nil || !strings.Contains(err.Error(), "the page is larger than") {
						t.Fatalf("Usage error %v, want the only node's page refused", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("Usage: %v", err)
				}
				if len(got.Problems) != 1 || got.Problems[0].Reason != tc.wantReason {
					t.Errorf("problems %v, want one %s", got.Problems, tc.wantReason)
				}
			})
		}
	}
}

// httptestServer serves h over plain HTTP, as an apiserver stand-in.
func httptestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

package prometheus_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/api"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/metrics/prometheus"
	"github.com/tailorhq/tailor/test/builder"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// vector is a Prometheus HTTP API answer with one sample per entry, evaluated at now.
func vector(samples ...string) string {
	return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(samples, ",") + `]}}`
}

// sample is one vector element for ns/web/app (or the given container), as
// Prometheus writes it: the value is a JSON string.
func sample(container, value string) string {
	return fmt.Sprintf(`{"metric":{"namespace":"ns","pod":"web","container":%q},"value":[%d.000,%q]}`, container, now.Unix(), value)
}

func ts(t time.Time) string { return fmt.Sprintf("%.3f", float64(t.UnixMilli())/1000) }

// answers maps a query kind to the raw HTTP status and body Prometheus gives.
type answers map[string]struct {
	status int
	body   string
}

func ok(body string) struct {
	status int
	body   string
} {
	return struct {
		status int
		body   string
	}{http.StatusOK, body}
}

func kind(q string) string {
	switch {
	case strings.Contains(q, "timestamp("):
		return "timestamp"
	case strings.Contains(q, "throttled"):
		return "throttled"
	case strings.Contains(q, "cpu_usage"):
		return "cpu"
	case strings.Contains(q, "working_set"):
		return "memory"
	}
	return "other"
}

func serve(t *testing.T, a answers) (*httptest.Server, *[]string) {
	var mu sync.Mutex
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Errorf("parse form: %v", err)
		}
		q := r.Form.Get("query")
		mu.Lock()
		queries = append(queries, q)
		mu.Unlock()
		ans, found := a[kind(q)]
		if !found {
			ans = ok(vector())
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(ans.status)
		_, _ = w.Write([]byte(ans.body))
	}))
	t.Cleanup(srv.Close)
	return srv, &queries
}

func newSource(t *testing.T, url string, q prometheus.Queries) *prometheus.Source {
	t.Helper()
	client, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		t.Fatal(err)
	}
	s, err := prometheus.New(client, prometheus.Options{Queries: q, Window: time.Minute, MaxAge: time.Minute, Clock: clocktesting.NewFakePassiveClock(now)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ptr(v float64) *float64 { return &v }

func TestUsage(t *testing.T) {
	pod := builder.Pod("web").Namespace("ns").Container(builder.Container("app")).Running().Obj()
	app := metrics.Key{Namespace: "ns", Pod: "web", Container: "app"}
	measured := now.Add(-7 * time.Second)
	good := func() answers {
		return answers{
			"cpu":       ok(vector(sample("app", "0.5"))),
			"memory":    ok(vector(sample("app", "104857600"))),
			"throttled": ok(vector(sample("app", "0.25"))),
			"timestamp": ok(vector(sample("app", ts(measured)))),
		}
	}
	patch := func(a answers, k string, status int, body string) answers {
		a[k] = struct {
			status int
			body   string
		}{status, body}
		return a
	}
	missing := "the query returned no series for this container"

	cases := map[string]struct {
		answers      answers
		wantUsage    map[metrics.Key]metrics.Usage
		wantProblems []metrics.Problem
		wantErr      string
	}{
		"good answer, dated by the scrape timestamp": {
			answers:   good(),
			wantUsage: map[metrics.Key]metrics.Usage{app: {Key: app, Time: measured, Window: time.Minute, CPU: 0.5, Memory: 100 << 20, Throttled: ptr(0.25), ThrottledSince: measured.Add(-time.Minute)}},
		},
		"no throttling series (no CPU limit) is not a problem": {
			answers:   patch(good(), "throttled", 200, vector()),
			wantUsage: map[metrics.Key]metrics.Usage{app: {Key: app, Time: measured, Window: time.Minute, CPU: 0.5, Memory: 100 << 20}},
		},
		"throttled 0/0 is NaN: usage kept, throttling reported": {
			answers:      patch(good(), "throttled", 200, vector(sample("app", "NaN"))),
			wantUsage:    map[metrics.Key]metrics.Usage{app: {Key: app, Time: measured, Window: time.Minute, CPU: 0.5, Memory: 100 << 20}},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricThrottling, Reason: metrics.ReasonInvalid, Detail: "value NaN"}},
		},
		"NaN CPU and +Inf memory hold the container": {
			answers:   patch(patch(good(), "cpu", 200, vector(sample("app", "NaN"))), "memory", 200, vector(sample("app", "+Inf"))),
			wantUsage: map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{
				{Key: app, Metric: metrics.MetricCPU, Reason: metrics.ReasonInvalid, Detail: "value NaN"},
				{Key: app, Metric: metrics.MetricMemory, Reason: metrics.ReasonInvalid, Detail: "value +Inf"},
			},
		},
		"negative CPU rate is invalid": {
			answers:      patch(good(), "cpu", 200, vector(sample("app", "-0.3"))),
			wantUsage:    map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricCPU, Reason: metrics.ReasonInvalid, Detail: "value -0.3"}},
		},
		"empty vectors: missing, never zero": {
			answers:   answers{"cpu": ok(vector()), "memory": ok(vector()), "timestamp": ok(vector())},
			wantUsage: map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{
				{Key: app, Metric: metrics.MetricCPU, Reason: metrics.ReasonMissing, Detail: missing},
				{Key: app, Metric: metrics.MetricMemory, Reason: metrics.ReasonMissing, Detail: missing},
			},
		},
		"series of other containers only": {
			answers:   answers{"cpu": ok(vector(sample("sidecar", "1"))), "memory": ok(vector(sample("sidecar", "1")))},
			wantUsage: map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{
				{Key: app, Metric: metrics.MetricCPU, Reason: metrics.ReasonMissing, Detail: missing},
				{Key: app, Metric: metrics.MetricMemory, Reason: metrics.ReasonMissing, Detail: missing},
			},
		},
		"series without a container label cannot be attributed": {
			answers: answers{
				"cpu":    ok(vector(`{"metric":{"namespace":"ns","pod":"web"},"value":[1795000000,"0.5"]}`)),
				"memory": ok(vector(sample("app", "1"))),
			},
			wantUsage:    map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricCPU, Reason: metrics.ReasonMissing, Detail: missing}},
		},
		"stale scrape: Prometheus still answers, but from minutes ago": {
			answers:   patch(good(), "timestamp", 200, vector(sample("app", ts(now.Add(-5*time.Minute))))),
			wantUsage: map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{
				{Key: app, Metric: metrics.MetricCPU, Reason: metrics.ReasonStale, Detail: "measured at 2026-11-21T11:55:00Z, 5m0s before now, more than the 1m0s allowed"},
				{Key: app, Metric: metrics.MetricMemory, Reason: metrics.ReasonStale, Detail: "measured at 2026-11-21T11:55:00Z, 5m0s before now, more than the 1m0s allowed"},
			},
		},
		"stale sample timestamp without a timestamp query answer": {
			answers: answers{
				"cpu":    ok(vector(fmt.Sprintf(`{"metric":{"namespace":"ns","pod":"web","container":"app"},"value":[%d,"0.5"]}`, now.Add(-time.Hour).Unix()))),
				"memory": ok(vector(sample("app", "1"))),
			},
			wantUsage:    map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricCPU, Reason: metrics.ReasonStale, Detail: "measured at 2026-11-21T11:00:00Z, 1h0m0s before now, more than the 1m0s allowed"}},
		},
		"matrix instead of vector": {
			answers:      patch(good(), "cpu", 200, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"namespace":"ns","pod":"web","container":"app"},"values":[[1795000000,"0.5"]]}]}}`),
			wantUsage:    map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricCPU, Reason: metrics.ReasonMalformed, Detail: "the cpu query returned a matrix, want an instant vector"}},
		},
		"scalar instead of vector": {
			answers:      patch(good(), "memory", 200, `{"status":"success","data":{"resultType":"scalar","result":[1795000000,"3"]}}`),
			wantUsage:    map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricMemory, Reason: metrics.ReasonMalformed, Detail: "the memory query returned a scalar, want an instant vector"}},
		},
		"two series for one container": {
			answers:   patch(good(), "memory", 200, vector(sample("app", "1"), sample("app", "2"))),
			wantUsage: map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricMemory, Reason: metrics.ReasonMalformed,
				Detail: "the query returned more than one series for this container; aggregate by namespace, pod, container"}},
		},
		"query refused as bad_data": {
			answers:   patch(good(), "cpu", http.StatusBadRequest, `{"status":"error","errorType":"bad_data","error":"1:10: parse error: unexpected \"}\""}`),
			wantUsage: map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricCPU, Reason: metrics.ReasonMalformed,
				Detail: "the cpu query: Prometheus refused the query as invalid (HTTP 400); check that it knows every function the query calls"}},
		},
		"server error is the source's error": {
			answers: patch(good(), "cpu", http.StatusServiceUnavailable, "upstream connect error"),
			wantErr: "prometheus cpu query for namespace ns",
		},
		"query timeout is the source's error": {
			answers: patch(good(), "memory", http.StatusServiceUnavailable, `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`),
			wantErr: "prometheus memory query for namespace ns",
		},
		"malformed JSON is the source's error": {
			answers: patch(good(), "cpu", 200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":`),
			wantErr: "prometheus cpu query for namespace ns",
		},
		"unparsable sample value is the source's error": {
			answers: patch(good(), "cpu", 200, vector(sample("app", "lots"))),
			wantErr: "prometheus cpu query for namespace ns",
		},
		"HTML from a proxy is the source's error": {
			answers: patch(good(), "cpu", 200, "<html><body>Sign in</body></html>"),
			wantErr: "prometheus cpu query for namespace ns",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv, _ := serve(t, tc.answers)
			got, err := newSource(t, srv.URL, prometheus.Queries{}).Usage(context.Background(), []*corev1.Pod{pod})
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

func TestQueriesRendered(t *testing.T) {
	pods := []*corev1.Pod{
		builder.Pod("web-1.v2").Namespace("ns").Container(builder.Container("app")).Running().Obj(),
		builder.Pod("api").Namespace("ns").Container(builder.Container("app")).Running().Obj(),
		builder.Pod("db").Namespace("other").Container(builder.Container("app")).Running().Obj(),
	}
	cases := map[string]struct {
		queries prometheus.Queries
		want    []string
	}{
		"defaults: one query per figure per namespace, pod names escaped": {
			want: []string{
				`sum by (namespace, pod, container) (rate(container_cpu_usage_seconds_total{namespace="ns", pod=~"api|web-1\\.v2", container!="", container!="POD"}[1m]))`,
				`max by (namespace, pod, container) (container_memory_working_set_bytes{namespace="ns", pod=~"api|web-1\\.v2", container!="", container!="POD"})`,
				`sum by (namespace, pod, container) (rate(container_cpu_cfs_throttled_periods_total{namespace="ns", pod=~"api|web-1\\.v2", container!="", container!="POD"}[1m])) / sum by (namespace, pod, container) (rate(container_cpu_cfs_periods_total{namespace="ns", pod=~"api|web-1\\.v2", container!="", container!="POD"}[1m]))`,
				`max by (namespace, pod, container) (timestamp(container_memory_working_set_bytes{namespace="ns", pod=~"api|web-1\\.v2", container!="", container!="POD"}))`,
				`sum by (namespace, pod, container) (rate(container_cpu_usage_seconds_total{namespace="other", pod=~"db", container!="", container!="POD"}[1m]))`,
				`max by (namespace, pod, container) (container_memory_working_set_bytes{namespace="other", pod=~"db", container!="", container!="POD"})`,
				`sum by (namespace, pod, container) (rate(container_cpu_cfs_throttled_periods_total{namespace="other", pod=~"db", container!="", container!="POD"}[1m])) / sum by (namespace, pod, container) (rate(container_cpu_cfs_periods_total{namespace="other", pod=~"db", container!="", container!="POD"}[1m]))`,
				`max by (namespace, pod, container) (timestamp(container_memory_working_set_bytes{namespace="other", pod=~"db", container!="", container!="POD"}))`,
			},
		},
		"overridden CPU query, the rest default": {
			queries: prometheus.Queries{CPU: `sum by (namespace, pod, container) (irate(my_cpu{ns="{{.Namespace}}", pod=~"{{.Pods}}"}[{{.Window}}]))`},
			want: []string{
				`sum by (namespace, pod, container) (irate(my_cpu{ns="ns", pod=~"api|web-1\\.v2"}[1m]))`,
				`sum by (namespace, pod, container) (irate(my_cpu{ns="other", pod=~"db"}[1m]))`,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv, queries := serve(t, answers{})
			if _, err := newSource(t, srv.URL, tc.queries).Usage(context.Background(), pods); err != nil {
				t.Fatalf("Usage: %v", err)
			}
			for _, w := range tc.want {
				found := false
				for _, q := range *queries {
					found = found || q == w
				}
				if !found {
					t.Errorf("query not sent: %s\nsent:\n%s", w, strings.Join(*queries, "\n"))
				}
			}
		})
	}
}

// cAdvisor dates its samples by its own housekeeping, 10-20s apart, so the
// rates must end at each container's newest sample, not at now: rate()
// extrapolates only half an interval past the last sample and would read
// low. Containers measured close together share one evaluation.
func TestRatesEvaluatedWhenTheDataWasMeasured(t *testing.T) {
	pods := []*corev1.Pod{
		builder.Pod("web").Namespace("ns").Container(builder.Container("app")).Container(builder.Container("sidecar")).Running().Obj(),
		builder.Pod("api").Namespace("ns").Container(builder.Container("app")).Running().Obj(),
		builder.Pod("db").Namespace("ns").Container(builder.Container("app")).Running().Obj(),
	}
	measured := map[string]time.Time{
		"web/app":     now.Add(-7 * time.Second),
		"api/app":     now.Add(-11 * time.Second), // within the 5s (window/12) of web/app
		"web/sidecar": now.Add(-19 * time.Second),
		// db/app: no timestamp series, so evaluated at now.
	}
	type call struct{ kind, pods, at string }
	var mu sync.Mutex
	var calls []call
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Errorf("parse form: %v", err)
		}
		q, at := r.Form.Get("query"), r.Form.Get("time")
		pods := regexp.MustCompile(`pod=~"([^"]*)"`).FindStringSubmatch(q)[1]
		evalAt, err := strconv.ParseFloat(at, 64)
		if err != nil {
			t.Errorf("query time %q: %v", at, err)
		}
		mu.Lock()
		calls = append(calls, call{kind(q), pods, time.UnixMilli(int64(evalAt * 1000)).Sub(now).String()})
		mu.Unlock()
		var out []string
		for _, pod := range strings.Split(pods, "|") {
			for _, c := range []string{"app", "sidecar"} {
				m, dated := measured[pod+"/"+c]
				if pod != "web" && c == "sidecar" {
					continue
				}
				el := func(v string) string {
					return fmt.Sprintf(`{"metric":{"namespace":"ns","pod":%q,"container":%q},"value":[%s,%q]}`, pod, c, at, v)
				}
				switch {
				case kind(q) == "timestamp" && dated:
					out = append(out, el(ts(m)))
				case kind(q) == "cpu":
					// Seconds from now to the evaluation: which
					// evaluation each container's figure came from.
					out = append(out, el(fmt.Sprint(-time.UnixMilli(int64(evalAt*1000)).Sub(now).Seconds())))
				case kind(q) == "memory":
					out = append(out, el("1048576"))
				}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(vector(out...)))
	}))
	t.Cleanup(srv.Close)

	got, err := newSource(t, srv.URL, prometheus.Queries{}).Usage(context.Background(), pods)
	if err != nil {
		t.Fatalf("Usage: %v", err)
	}
	wantCalls := []call{
		{"timestamp", "api|db|web", "0s"},
		{"cpu", "db", "0s"}, {"memory", "db", "0s"}, {"throttled", "db", "0s"},
		{"cpu", "api|web", "-7s"}, {"memory", "api|web", "-7s"}, {"throttled", "api|web", "-7s"},
		{"cpu", "web", "-19s"}, {"memory", "web", "-19s"}, {"throttled", "web", "-19s"},
	}
	if diff := cmp.Diff(wantCalls, calls, cmp.AllowUnexported(call{})); diff != "" {
		t.Errorf("queries (-want,+got):\n%s", diff)
	}
	want := map[string]struct {
		cpu float64
		at  time.Time
	}{
		"web/app":     {7, measured["web/app"]},
		"api/app":     {7, measured["api/app"]},
		"web/sidecar": {19, measured["web/sidecar"]},
		"db/app":      {0, now},
	}
	for k, w := range want {
		pod, c, _ := strings.Cut(k, "/")
		u, ok := got.Usage[metrics.Key{Namespace: "ns", Pod: pod, Container: c}]
		if !ok {
			t.Errorf("%s: no usage; problems %v", k, got.Problems)
			continue
		}
		if u.CPU != w.cpu || !u.Time.Equal(w.at) {
			t.Errorf("%s: cpu from the evaluation %vs before now, dated %s; want %vs, dated %s", k, u.CPU, u.Time.Format(time.TimeOnly), w.cpu, w.at.Format(time.TimeOnly))
		}
	}
}

func TestNewRejectsBadQueries(t *testing.T) {
	client, err := api.NewClient(api.Config{Address: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		queries prometheus.Queries
		wantErr string
	}{
		"unparsable template": {queries: prometheus.Queries{CPU: "rate(x{{.Namespace}[1m])"}, wantErr: "the cpu query is not a valid template"},
		"unknown field":       {queries: prometheus.Queries{Memory: "x{ns=\"{{.Nmespace}}\"}"}, wantErr: "the memory query: render template memory"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := prometheus.New(client, prometheus.Options{Queries: tc.queries})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestWithQueries(t *testing.T) {
	pods := []*corev1.Pod{builder.Pod("web").Namespace("ns").Container(builder.Container("app")).Running().Obj()}
	// The manager's source has a memory query of its own and a 2m window: a
	// policy's source must keep both where the policy says nothing.
	managerMemory := `max by (namespace, pod, container) (mem_bytes{namespace="{{.Namespace}}", pod=~"{{.Pods}}"})`
	def := prometheus.DefaultQueries()
	rendered := strings.NewReplacer("{{.Namespace}}", "ns", "{{.Pods}}", "web", "{{.Window}}", "2m").Replace
	sent := func(q prometheus.Queries) []string {
		return []string{rendered(q.Timestamp), rendered(q.CPU), rendered(q.Memory), rendered(q.Throttled)}
	}
	manager := prometheus.Queries{CPU: def.CPU, Memory: managerMemory, Throttled: def.Throttled, Timestamp: def.Timestamp}
	policyCPU := `sum by (namespace, pod, container) (rate(app_cpu_seconds{namespace="{{.Namespace}}", pod=~"{{.Pods}}"}[{{.Window}}])) * 4`
	policyCPUSent := `sum by (namespace, pod, container) (rate(app_cpu_seconds{namespace="ns",pod=~"web"}[2m])) * 4`

	cases := map[string]struct {
		overrides metrics.QueryOverrides
		// wantSent is what the policy's source asks Prometheus, in order.
		wantSent []string
		wantErr  string
	}{
		"no overrides: the manager's queries": {
			wantSent: sent(manager),
		},
		// The policy's query is sent confined to its namespace, as the
		// parser writes it out; the manager's as its operator wrote them.
		"cpu only: the others stay the manager's, not the defaults": {
			overrides: metrics.QueryOverrides{CPU: policyCPU, Namespace: "ns"},
			wantSent:  []string{rendered(def.Timestamp), policyCPUSent, rendered(managerMemory), rendered(def.Throttled)},
		},
		"every query, the namespace put on each selector": {
			overrides: metrics.QueryOverrides{CPU: policyCPU, Memory: "mem{pod=~\"{{.Pods}}\"}", Throttled: "thr{pod=~\"{{.Pods}}\"} / thr_total", Timestamp: "ts{pod=~\"{{.Pods}}\"}", Namespace: "ns"},
			wantSent:  []string{`ts{namespace="ns",pod=~"web"}`, policyCPUSent, `mem{namespace="ns",pod=~"web"}`, `thr{namespace="ns",pod=~"web"} / thr_total{namespace="ns"}`},
		},
		"a query of another namespace": {
			overrides: metrics.QueryOverrides{Memory: `mem{namespace="payments"}`, Namespace: "ns"},
			wantErr:   `the memory query: the query could read outside the policy's namespace: mem{namespace="payments"} reads namespace "payments", not the policy's "ns"`,
		},
		"a policy's query with no namespace to confine it to": {
			overrides: metrics.QueryOverrides{Memory: `mem`},
			wantErr:   "the memory query is a policy's, and no namespace was given to confine it to",
		},
		"cpu template does not parse": {
			overrides: metrics.QueryOverrides{CPU: "sum(rate(x[{{.Window}]))", Namespace: "ns"},
			wantErr:   "the cpu query is not a valid template",
		},
		"memory names a field templates do not have": {
			overrides: metrics.QueryOverrides{Memory: `mem{node="{{.Node}}"}`, Namespace: "ns"},
			wantErr:   "the memory query: render template memory",
		},
		"blank cpu query": {
			overrides: metrics.QueryOverrides{CPU: "  ", Namespace: "ns"},
			wantErr:   "the cpu query is empty",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv, queries := serve(t, answers{})
			client, err := api.NewClient(api.Config{Address: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			base, err := prometheus.New(client, prometheus.Options{Queries: prometheus.Queries{Memory: managerMemory}, Window: 2 * time.Minute,
				Clock: clocktesting.NewFakePassiveClock(now)})
			if err != nil {
				t.Fatal(err)
			}
			src, err := base.WithQueries(tc.overrides)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("WithQueries: %v", err)
			}
			if _, err := src.Usage(context.Background(), pods); err != nil {
				t.Fatalf("Usage of the policy's source: %v", err)
			}
			if diff := cmp.Diff(tc.wantSent, *queries); diff != "" {
				t.Errorf("policy's queries (-want,+got):\n%s", diff)
			}
			// The manager's source, which every other policy reads through,
			// is untouched.
			*queries = nil
			if _, err := base.Usage(context.Background(), pods); err != nil {
				t.Fatalf("Usage of the manager's source: %v", err)
			}
			if diff := cmp.Diff(sent(manager), *queries); diff != "" {
				t.Errorf("manager's queries after deriving (-want,+got):\n%s", diff)
			}
		})
	}
}

// A container whose rate window reaches back before its series began reads
// low, so its CPU waits until the series covers the window: started less
// than two windows before the sample, it is warming up (held without
// noise); started earlier, it counts.
func TestYoungContainerWarmsUp(t *testing.T) {
	measured := now.Add(-7 * time.Second)
	srv, _ := serve(t, answers{
		"cpu":       ok(vector(sample("app", "0.35"))),
		"memory":    ok(vector(sample("app", "104857600"))),
		"throttled": ok(vector(sample("app", "0.25"))),
		"timestamp": ok(vector(sample("app", ts(measured)))),
	})
	app := metrics.Key{Namespace: "ns", Pod: "web", Container: "app"}
	for _, tc := range []struct {
		age  time.Duration // of the container at the sample
		want bool
	}{{30 * time.Second, false}, {119 * time.Second, false}, {2 * time.Minute, true}, {time.Hour, true}} {
		pod := builder.Pod("web").Namespace("ns").Container(builder.Container("app")).Running().Obj()
		pod.Status.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(measured.Add(-tc.age))
		got, err := newSource(t, srv.URL, prometheus.Queries{}).Usage(context.Background(), []*corev1.Pod{pod})
		if err != nil {
			t.Fatalf("Usage: %v", err)
		}
		_, used := got.Usage[app]
		if used != tc.want {
			t.Errorf("started %s before its sample: usage %v, want %v (problems %v)", tc.age, used, tc.want, got.Problems)
		}
		if !tc.want && (len(got.Problems) != 1 || got.Problems[0].Metric != metrics.MetricCPU || got.Problems[0].Reason != metrics.ReasonWarmingUp) {
			t.Errorf("started %s before its sample: problems %v, want CPU warming up alone", tc.age, got.Problems)
		}
	}
}

// A young container whose CPU query has no answer says Missing, not
// WarmingUp: waiting would not bring the series.
func TestYoungContainerMissingCPUSaysMissing(t *testing.T) {
	measured := now.Add(-7 * time.Second)
	srv, _ := serve(t, answers{
		"cpu":       ok(vector()),
		"memory":    ok(vector(sample("app", "104857600"))),
		"timestamp": ok(vector(sample("app", ts(measured)))),
	})
	pod := builder.Pod("web").Namespace("ns").Container(builder.Container("app")).Running().Obj()
	pod.Status.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(measured.Add(-30 * time.Second))
	got, err := newSource(t, srv.URL, prometheus.Queries{}).Usage(context.Background(), []*corev1.Pod{pod})
	if err != nil {
		t.Fatalf("Usage: %v", err)
	}
	if len(got.Problems) != 1 || got.Problems[0].Reason != metrics.ReasonMissing {
		t.Errorf("problems %v, want CPU Missing", got.Problems)
	}
}

// Issue #34: a policy's queries are bounded per sync. Forty pods measured
// six seconds apart each make an evaluation group of their own, and the
// manager's source asks three queries for each; a source running a
// policy's queries widens the groups until they are few, so one sync of
// the policy asks at most 25, and every container still has its figures.
func TestPolicyQueriesBoundedPerSync(t *testing.T) {
	var pods []*corev1.Pod
	stamps := map[string]time.Time{}
	for i := range 40 {
		name := fmt.Sprintf("web-%d", i)
		pods = append(pods, builder.Pod(name).Namespace("ns").Container(builder.Container("app")).Running().Obj())
		stamps[name] = now.Add(-time.Duration(i) * 6 * time.Second)
	}
	var mu sync.Mutex
	var asked int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		q := r.Form.Get("query")
		mu.Lock()
		asked++
		mu.Unlock()
		var out []string
		for _, pod := range strings.Split(regexp.MustCompile(`pod=~"([^"]*)"`).FindStringSubmatch(q)[1], "|") {
			v := "0.5"
			if kind(q) == "timestamp" {
				v = ts(stamps[pod])
			}
			out = append(out, fmt.Sprintf(`{"metric":{"namespace":"ns","pod":%q,"container":"app"},"value":[%d,%q]}`, pod, now.Unix(), v))
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(vector(out...)))
	}))
	t.Cleanup(srv.Close)
	client, err := api.NewClient(api.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	manager, err := prometheus.New(client, prometheus.Options{Window: time.Minute, MaxAge: 10 * time.Minute, Clock: clocktesting.NewFakePassiveClock(now)})
	if err != nil {
		t.Fatal(err)
	}
	policy, err := manager.WithQueries(metrics.QueryOverrides{
		CPU: `sum by (namespace, pod, container) (rate(app_cpu_usage_seconds{pod=~"{{.Pods}}"}[{{.Window}}]))`, Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		src       metrics.Source
		wantAsked int
		// atMost: wantAsked is a bound, not the count.
		atMost bool
	}{
		"the manager's queries: three per group":   {src: manager, wantAsked: 1 + 40*3},
		"a policy's queries: at most eight groups": {src: policy, wantAsked: 1 + 8*3, atMost: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mu.Lock()
			asked = 0
			mu.Unlock()
			got, err := tc.src.Usage(context.Background(), pods)
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if asked > tc.wantAsked || !tc.atMost && asked != tc.wantAsked {
				t.Errorf("asked Prometheus %d times, want %d (at most: %v)", asked, tc.wantAsked, tc.atMost)
			}
			if len(got.Usage) != len(pods) || len(got.Problems) != 0 {
				t.Errorf("usage of %d containers of %d, problems %v; want every container's", len(got.Usage), len(pods), got.Problems)
			}
		})
	}
}

package metricsserver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/metrics/pkg/client/clientset/versioned"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/metrics/metricsserver"
	"github.com/tailorhq/tailor/test/builder"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// podMetrics is one item as metrics-server serves it.
func podMetrics(pod string, at time.Time, containers ...string) string {
	return fmt.Sprintf(`{"metadata":{"name":%q,"namespace":"ns","creationTimestamp":%q},"timestamp":%q,"window":"10.5s","containers":[%s]}`,
		pod, now.Format(time.RFC3339), at.Format(time.RFC3339), strings.Join(containers, ","))
}

func container(name, usage string) string {
	return fmt.Sprintf(`{"name":%q,"usage":%s}`, name, usage)
}

func list(items ...string) string {
	return `{"kind":"PodMetricsList","apiVersion":"metrics.k8s.io/v1beta1","metadata":{},"items":[` + strings.Join(items, ",") + `]}`
}

func TestUsage(t *testing.T) {
	pod := builder.Pod("web").Namespace("ns").Container(builder.Container("app")).Running().Obj()
	app := metrics.Key{Namespace: "ns", Pod: "web", Container: "app"}
	measured := now.Add(-8 * time.Second)
	window := 10500 * time.Millisecond

	cases := map[string]struct {
		status       int
		body         string
		wantUsage    map[metrics.Key]metrics.Usage
		wantProblems []metrics.Problem
		wantErr      string
	}{
		"usage of the asked pod, others ignored": {
			body: list(
				podMetrics("web", measured, container("app", `{"cpu":"503m","memory":"105644Ki"}`)),
				podMetrics("other", measured, container("app", `{"cpu":"1","memory":"1Gi"}`)),
			),
			wantUsage: map[metrics.Key]metrics.Usage{app: {Key: app, Time: measured, Window: window, CPU: 0.503, Memory: 105644 * 1024}},
		},
		"nanocores are kept": {
			body:      list(podMetrics("web", measured, container("app", `{"cpu":"1234567n","memory":"0"}`))),
			wantUsage: map[metrics.Key]metrics.Usage{app: {Key: app, Time: measured, Window: window, CPU: 0.001234567}},
		},
		"pod not (yet) in metrics-server": {
			body:         list(),
			wantUsage:    map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricAll, Reason: metrics.ReasonMissing, Detail: "the source has no sample for this container"}},
		},
		"memory absent from usage": {
			body:      list(podMetrics("web", measured, container("app", `{"cpu":"10m"}`))),
			wantUsage: map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricMemory, Reason: metrics.ReasonMissing,
				Detail: "the PodMetrics has no memory usage for this container"}},
		},
		"negative usage is invalid": {
			body:         list(podMetrics("web", measured, container("app", `{"cpu":"-5m","memory":"1Mi"}`))),
			wantUsage:    map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricCPU, Reason: metrics.ReasonInvalid, Detail: "value -0.005"}},
		},
		"stale PodMetrics": {
			body:      list(podMetrics("web", now.Add(-10*time.Minute), container("app", `{"cpu":"10m","memory":"1Mi"}`))),
			wantUsage: map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{
				{Key: app, Metric: metrics.MetricCPU, Reason: metrics.ReasonStale, Detail: "measured at 2026-11-21T11:50:00Z, 10m0s before now, more than the 2m0s allowed"},
				{Key: app, Metric: metrics.MetricMemory, Reason: metrics.ReasonStale, Detail: "measured at 2026-11-21T11:50:00Z, 10m0s before now, more than the 2m0s allowed"},
			},
		},
		"APIService unavailable is the source's error": {
			status:  http.StatusServiceUnavailable,
			body:    `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"service unavailable","reason":"ServiceUnavailable","code":503}`,
			wantErr: "list pods.metrics.k8s.io in namespace ns: service unavailable",
		},
		"API not registered is the source's error": {
			status:  http.StatusNotFound,
			body:    `404 page not found`,
			wantErr: "list pods.metrics.k8s.io in namespace ns: the server could not find the requested resource",
		},
		"garbage is the source's error": {
			body:    `{"items": "lots"}`,
			wantErr: "list pods.metrics.k8s.io in namespace ns",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods" {
					http.Error(w, "unexpected path "+r.URL.Path, http.StatusTeapot)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				if tc.status != 0 {
					w.WriteHeader(tc.status)
				}
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			cs, err := versioned.NewForConfig(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			src := metricsserver.New(cs.MetricsV1beta1(), metricsserver.Options{Clock: clocktesting.NewFakePassiveClock(now)})
			got, err := src.Usage(context.Background(), []*corev1.Pod{pod})
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

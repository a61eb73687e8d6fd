package policy

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	promapi "github.com/prometheus/client_golang/api"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/yaml"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/controller/policy/gather"
	"github.com/tailorhq/tailor/internal/controller/policy/store"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/metrics/prometheus"
)

// plainSource stands for a source without queries (kubelet, metrics-server).
type plainSource struct{}

func (plainSource) Name() string { return "kubelet" }
func (plainSource) Usage(context.Context, []*corev1.Pod) (metrics.Result, error) {
	return metrics.Result{}, nil
}

// recordingSource is a Templated source whose derived sources remember the
// overrides they were made with.
type recordingSource struct{ plainSource }

type derivedSource struct {
	plainSource
	overrides metrics.QueryOverrides
}

func (recordingSource) WithQueries(o metrics.QueryOverrides) (metrics.Source, error) {
	return derivedSource{overrides: o}, nil
}

// unreachablePrometheus is a Prometheus source with the default queries and
// no server behind it: these tests derive sources, they never query.
func unreachablePrometheus(t *testing.T) *prometheus.Source {
	t.Helper()
	client, err := promapi.NewClient(promapi.Config{Address: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	prom, err := prometheus.New(client, prometheus.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return prom
}

func TestPolicySource(t *testing.T) {
	prom := unreachablePrometheus(t)
	queries := func(q v1alpha1.PrometheusQueries) *v1alpha1.MetricsOverrides {
		return &v1alpha1.MetricsOverrides{Prometheus: &q}
	}
	cases := map[string]struct {
		base    metrics.Source
		metrics *v1alpha1.MetricsOverrides
		// wantOverrides is what the derived source was made with; nil
		// means the manager's source is used as it is.
		wantOverrides *metrics.QueryOverrides
		wantIgnored   string
		// wantErr starts the message; what follows is text/template's own
		// words, which change between Go releases.
		wantErr string
		// wantReason is the Ready condition's; InvalidPolicy if unset.
		wantReason string
	}{
		"no metrics section": {
			base: recordingSource{},
		},
		"an empty prometheus section": {
			base:    recordingSource{},
			metrics: queries(v1alpha1.PrometheusQueries{}),
		},
		"each query to its own figure": {
			base:          recordingSource{},
			metrics:       queries(v1alpha1.PrometheusQueries{CPU: "c", Memory: "m", Throttled: "t", Timestamp: "ts"}),
			wantOverrides: &metrics.QueryOverrides{CPU: "c", Memory: "m", Throttled: "t", Timestamp: "ts", Namespace: "shop"},
		},
		"one query, the others left to the source": {
			base:          recordingSource{},
			metrics:       queries(v1alpha1.PrometheusQueries{Throttled: "t"}),
			wantOverrides: &metrics.QueryOverrides{Throttled: "t", Namespace: "shop"},
		},
		"a source without queries ignores them, and says so": {
			base:        plainSource{},
			metrics:     queries(v1alpha1.PrometheusQueries{CPU: "c"}),
			wantIgnored: "spec.metrics.prometheus is ignored: the manager reads usage from kubelet, not from Prometheus (--metrics-source=prometheus)",
		},
		"a cpu template that does not parse is an invalid policy": {
			base:    prom,
			metrics: queries(v1alpha1.PrometheusQueries{CPU: "sum(rate(x[{{.Window}]))"}),
			wantErr: "spec.metrics.prometheus: the cpu query is not a valid template: template: cpu:1: ",
		},
		"a memory template naming an unknown field is an invalid policy": {
			base:    prom,
			metrics: queries(v1alpha1.PrometheusQueries{Memory: `x{node="{{.Node}}"}`}),
			wantErr: `spec.metrics.prometheus: the memory query: render template memory: template: memory:1:`,
		},
		// Issue #34: the manager's credentials read every namespace; the
		// policy's queries read its own.
		"a cpu query of another namespace is refused": {
			base:       prom,
			metrics:    queries(v1alpha1.PrometheusQueries{CPU: `sum by (namespace, pod, container) (rate(cpu{namespace="payments", pod=~"{{.Pods}}"}[{{.Window}}]))`}),
			wantErr:    `spec.metrics.prometheus: the cpu query: the query could read outside the policy's namespace: cpu{namespace="payments",pod=~"pod"} reads namespace "payments", not the policy's "shop"`,
			wantReason: v1alpha1.ReasonQueryOutsideNamespace,
		},
		"a memory query of every namespace is refused": {
			base:       prom,
			metrics:    queries(v1alpha1.PrometheusQueries{Memory: `max by (namespace, pod, container) (mem{namespace=~".+"})`}),
			wantErr:    `spec.metrics.prometheus: the memory query: the query could read outside the policy's namespace: mem{namespace=~".+"} matches namespaces with namespace=~".+"`,
			wantReason: v1alpha1.ReasonQueryOutsideNamespace,
		},
		"a timestamp query that is not PromQL is an invalid policy": {
			base:    prom,
			metrics: queries(v1alpha1.PrometheusQueries{Timestamp: `max(timestamp(x{pod=~"{{.Pods}}"})`}),
			wantErr: `spec.metrics.prometheus: the timestamp query: the query is not PromQL: 1:`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			src, ignored, err := policySource(tc.base, "shop", &v1alpha1.TailorPolicySpec{Metrics: tc.metrics})
			if tc.wantErr != "" {
				reason := tc.wantReason
				if reason == "" {
					reason = v1alpha1.ReasonInvalidPolicy
				}
				var invalid *gather.InvalidPolicyError
				if !errors.As(err, &invalid) || invalid.Reason != reason {
					t.Fatalf("error = %v, want an InvalidPolicyError with reason %s", err, reason)
				}
				const hint = "; correct it, or leave it out to use the manager's query"
				if msg := err.Error(); !strings.HasPrefix(msg, tc.wantErr) || !strings.HasSuffix(msg, hint) {
					t.Errorf("message = %q, want %q...%q", msg, tc.wantErr, hint)
				}
				return
			}
			if err != nil {
				t.Fatalf("policySource: %v", err)
			}
			var gotOverrides *metrics.QueryOverrides
			if src != nil {
				d, ok := src.(derivedSource)
				if !ok {
					t.Fatalf("source = %T, want one derived by WithQueries", src)
				}
				gotOverrides = &d.overrides
			}
			if diff := cmp.Diff(tc.wantOverrides, gotOverrides); diff != "" {
				t.Errorf("overrides (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantIgnored, ignored); diff != "" {
				t.Errorf("ignored (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestPrepareSourceReportsIgnoredOverrides(t *testing.T) {
	overrides := &v1alpha1.MetricsOverrides{Prometheus: &v1alpha1.PrometheusQueries{CPU: "c"}}
	cases := map[string]struct {
		base        metrics.Source
		metrics     *v1alpha1.MetricsOverrides
		wantDerived bool
		wantIgnored string
		wantEvents  []string
	}{
		"no overrides: the manager's source, no event": {
			base: plainSource{},
		},
		"overrides the source takes: a derived source, no event": {
			base:        recordingSource{},
			metrics:     overrides,
			wantDerived: true,
		},
		"overrides the source cannot take: a warning event and the Ready note": {
			base:        plainSource{},
			metrics:     overrides,
			wantIgnored: "spec.metrics.prometheus is ignored: the manager reads usage from kubelet, not from Prometheus (--metrics-source=prometheus)",
			wantEvents:  []string{"Warning MetricsOverridesIgnored spec.metrics.prometheus is ignored: the manager reads usage from kubelet, not from Prometheus (--metrics-source=prometheus)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rec := events.NewFakeRecorder(10)
			r := &Reconciler{Source: tc.base, Events: rec}
			state := &store.PolicyState{}
			if err := r.prepareSource(&v1alpha1.TailorPolicy{Spec: v1alpha1.TailorPolicySpec{Metrics: tc.metrics}}, state); err != nil {
				t.Fatalf("prepareSource: %v", err)
			}
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				got = append(got, e)
			}
			if diff := cmp.Diff(tc.wantEvents, got); diff != "" {
				t.Errorf("events (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantIgnored, state.MetricsIgnored); diff != "" {
				t.Errorf("Ready note (-want,+got):\n%s", diff)
			}
			_, derived := r.usageSource(state).(derivedSource)
			if derived != tc.wantDerived {
				t.Errorf("usage read through a derived source: %v, want %v", derived, tc.wantDerived)
			}
		})
	}
}

// The full sample's queries are what users copy: they must compile.
func TestFullSampleQueriesCompile(t *testing.T) {
	data, err := os.ReadFile("../../../config/samples/tailorpolicy_full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var p v1alpha1.TailorPolicy
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		t.Fatal(err)
	}
	if p.Spec.Metrics == nil || p.Spec.Metrics.Prometheus == nil {
		t.Fatal("the full sample has no metrics.prometheus section")
	}
	prom := unreachablePrometheus(t)
	src, _, err := policySource(prom, "shop", &p.Spec)
	if err != nil || src == nil {
		t.Fatalf("policySource = %v, %v; want a source with the sample's queries", src, err)
	}
}

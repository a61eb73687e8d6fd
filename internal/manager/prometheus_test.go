package manager

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/config"
	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/internal/metrics/prometheus"
	"github.com/tailorhq/tailor/internal/metrics/prometheus/promtest"
	"github.com/tailorhq/tailor/test/builder"
)

// The manager's Prometheus source reaches a secured Prometheus (TLS under
// a CA of its own, a bearer token, a tenant header) as its client config
// says, on every query it sends, with the rate window it was given.
func TestPrometheusSourceSecured(t *testing.T) {
	srv := promtest.New(t, &tls.Config{}, func(r *http.Request) error {
		if r.Header.Get("Authorization") != "Bearer s3cret" || r.Header.Get("X-Scope-OrgID") != "team-a" {
			return errors.New("unauthorized")
		}
		if err := r.ParseForm(); err != nil {
			return err
		}
		if q := r.Form.Get("query"); strings.Contains(q, "rate(") && !strings.Contains(q, "[2m]") {
			return fmt.Errorf("query %q: want the rate window 2m", q)
		}
		return nil
	})
	token, ca := promtest.WriteFile(t, "token", "s3cret"), srv.CAFile
	src, err := NewSource(nil, nil, Options{
		MetricsSource:        "prometheus",
		PrometheusURL:        srv.URL,
		PrometheusRateWindow: 2 * time.Minute,
		PrometheusClient: &config.HTTPClientConfig{
			BearerTokenFile: token,
			TLSConfig:       config.TLSConfig{CAFile: ca},
			HTTPHeaders:     &config.Headers{Headers: map[string]config.Header{"X-Scope-OrgID": {Values: []string{"team-a"}}}},
		},
	})
	if err != nil {
		t.Fatalf("NewSource: %v", err)
	}
	pod := builder.Pod("web").Namespace("ns").Container(builder.Container("app")).Running().Obj()
	if _, err := src.Usage(context.Background(), []*corev1.Pod{pod}); err != nil {
		t.Fatalf("Usage: %v", err)
	}
	if srv.Served.Load() == 0 || srv.Refused.Load() != 0 {
		t.Errorf("Prometheus served %d queries and refused %d: want every query served", srv.Served.Load(), srv.Refused.Load())
	}
}

// The canaries' query guardrails ask the Prometheus usage comes from, or the
// one --prometheus-url names for them, through the same client config;
// without either, a manager has none to ask.
func TestGuardrailsPrometheus(t *testing.T) {
	srv := promtest.New(t, nil, func(r *http.Request) error {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			return errors.New("unauthorized")
		}
		return nil
	})
	secured := &config.HTTPClientConfig{BearerTokenFile: promtest.WriteFile(t, "token", "s3cret")}
	cases := map[string]struct {
		o    Options
		want bool
	}{
		"kubelet, no --prometheus-url":   {o: Options{MetricsSource: "kubelet", PrometheusURL: srv.URL}},
		"kubelet, --prometheus-url":      {o: Options{MetricsSource: "kubelet", PrometheusURL: srv.URL, PrometheusGuardrails: true}, want: true},
		"usage from Prometheus":          {o: Options{MetricsSource: "prometheus", PrometheusURL: srv.URL}, want: true},
		"the agent, Prometheus fallback": {o: Options{MetricsSource: "agent", AgentFallback: "prometheus", PrometheusURL: srv.URL}, want: true},
		"the agent, kubelet fallback":    {o: Options{MetricsSource: "agent", AgentFallback: "kubelet", PrometheusURL: srv.URL}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.o.PrometheusClient = secured
			g, err := newGuardrails(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if (g != nil) != tc.want {
				t.Fatalf("guardrails %v, want one: %v", g, tc.want)
			}
			if g == nil {
				return
			}
			before := srv.Served.Load()
			// The stand-in answers no series: the query ran, and said
			// nothing.
			if _, err := g.Value(context.Background(), "up", time.Now()); !errors.Is(err, prometheus.ErrNoValue) {
				t.Errorf("Value: %v, want no value from an empty answer", err)
			}
			if srv.Served.Load() != before+1 || srv.Refused.Load() != 0 {
				t.Errorf("served %d, refused %d: want the query served with the token", srv.Served.Load()-before, srv.Refused.Load())
			}
		})
	}
}

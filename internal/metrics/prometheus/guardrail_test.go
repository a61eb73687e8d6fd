package prometheus_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/api"

	"github.com/tailorhq/tailor/internal/metrics/prometheus"
	"github.com/tailorhq/tailor/internal/tenantquery"
)

// What is sent is the template rendered and confined to the policy's
// namespace (issue #34), as the PromQL parser writes it out.
func TestGuardrailRendered(t *testing.T) {
	const q = `histogram_quantile(0.99, sum by (le) (rate(lat_bucket{namespace="{{.Namespace}}", pod=~"{{.Pods}}"}[{{.Since}}])))`
	cases := map[string]struct {
		query     string
		namespace string
		pods      []string
		since     time.Duration
		want      string
	}{
		"one pod": {namespace: "shop", pods: []string{"web-0"}, since: 150 * time.Second,
			want: `histogram_quantile(0.99, sum by (le) (rate(lat_bucket{namespace="shop",pod=~"web-0"}[2m30s])))`},
		// A dot is any character to a regular expression: web.1 must not
		// match webx1, and the escape's backslash is itself escaped in
		// the PromQL string.
		"dotted names, alternated": {namespace: "shop", pods: []string{"web.1", "web-2"}, since: 90*time.Second + 900*time.Millisecond,
			want: `histogram_quantile(0.99, sum by (le) (rate(lat_bucket{namespace="shop",pod=~"web\\.1|web-2"}[1m30s])))`},
		// Names Kubernetes would refuse still cannot end the string.
		"quotes and backslashes": {namespace: `a"b\c`, pods: []string{`p"q`}, since: time.Minute,
			want: `histogram_quantile(0.99, sum by (le) (rate(lat_bucket{namespace="a\"b\\c",pod=~"p\"q"}[1m])))`},
		"just lowered": {namespace: "shop", pods: []string{"web-0"}, since: 0,
			want: `histogram_quantile(0.99, sum by (le) (rate(lat_bucket{namespace="shop",pod=~"web-0"}[1s])))`},
		"no namespace in the template: tailor puts it on every selector": {
			query:     `sum(rate(errors_total{pod=~"{{.Pods}}"}[{{.Since}}])) / sum(rate(requests_total{pod=~"{{.Pods}}"}[{{.Since}}]))`,
			namespace: "shop", pods: []string{"web-0"}, since: time.Minute,
			want: `sum(rate(errors_total{namespace="shop",pod=~"web-0"}[1m])) / sum(rate(requests_total{namespace="shop",pod=~"web-0"}[1m]))`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			query := tc.query
			if query == "" {
				query = q
			}
			g, err := prometheus.ParseGuardrail("latency", query, tc.namespace)
			if err != nil {
				t.Fatal(err)
			}
			got, err := g.Render(tc.pods, tc.since)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rendered (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestParseGuardrailRefuses(t *testing.T) {
	cases := map[string]struct {
		query, want string
		// wantOutside: the refusal wraps tenantquery.ErrOutsideNamespace.
		wantOutside bool
	}{
		"empty":         {query: "  ", want: "query guardrail g: the query is empty"},
		"unclosed":      {query: `up{pod=~"{{.Pods"}`, want: "query guardrail g is not a valid template"},
		"unknown field": {query: `up{pod=~"{{.Pod}}"}`, want: "can't evaluate field Pod"},
		"not PromQL":    {query: `sum(up{pod=~"{{.Pods}}"}`, want: "query guardrail g: the query is not PromQL: 1:"},
		"another namespace": {query: `sum(up{namespace="other-team"})`, wantOutside: true,
			want: `query guardrail g: the query could read outside the policy's namespace: up{namespace="other-team"} reads namespace "other-team", not the policy's "shop"`},
		"every namespace": {query: `sum(up{namespace!=""})`, wantOutside: true,
			want: `up{namespace!=""} matches namespaces with namespace!=""`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := prometheus.ParseGuardrail("g", tc.query, "shop")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
			if errors.Is(err, tenantquery.ErrOutsideNamespace) != tc.wantOutside {
				t.Errorf("errors.Is(%v, ErrOutsideNamespace) = %v, want %v", err, !tc.wantOutside, tc.wantOutside)
			}
		})
	}
}

func TestGuardrailValue(t *testing.T) {
	cases := map[string]struct {
		status    int
		body      string
		want      float64
		wantErr   string
		wantNoVal bool
	}{
		"one sample":  {body: vector(`{"metric":{},"value":[1.0,"0.31"]}`), want: 0.31},
		"a scalar":    {body: `{"status":"success","data":{"resultType":"scalar","result":[1.0,"2.5"]}}`, want: 2.5},
		"+Inf":        {body: vector(`{"metric":{},"value":[1.0,"+Inf"]}`), want: posInf()},
		"empty":       {body: vector(), wantErr: "0 series, want one", wantNoVal: true},
		"two series":  {body: vector(`{"metric":{"pod":"a"},"value":[1.0,"1"]}`, `{"metric":{"pod":"b"},"value":[1.0,"2"]}`), wantErr: "2 series, want one", wantNoVal: true},
		"NaN":         {body: vector(`{"metric":{},"value":[1.0,"NaN"]}`), wantErr: "NaN", wantNoVal: true},
		"bad query":   {status: http.StatusBadRequest, body: `{"status":"error","errorType":"bad_data","error":"parse error: unexpected }"}`, wantErr: "Prometheus refused the query as invalid (HTTP 400)"},
		"unreachable": {status: -1, wantErr: "Prometheus could not be reached"},
		"unavailable": {status: http.StatusServiceUnavailable, body: `no`, wantErr: "Prometheus failed to answer (HTTP 503)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var asked string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_ = r.ParseForm()
				asked = r.Form.Get("query")
				w.Header().Set("Content-Type", "application/json")
				if tc.status > 0 {
					w.WriteHeader(tc.status)
				}
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			if tc.status == -1 {
				srv.Close()
			}
			c, err := api.NewClient(api.Config{Address: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			got, err := prometheus.NewGuardrails(c).Value(context.Background(), "up", now)
			if asked != "up" && tc.status != -1 {
				t.Errorf("Prometheus was asked %q, want up", asked)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				if errors.Is(err, prometheus.ErrNoValue) != tc.wantNoVal {
					t.Errorf("errors.Is(%v, ErrNoValue) = %v, want %v", err, !tc.wantNoVal, tc.wantNoVal)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Value = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func posInf() float64 { var z float64; return 1 / z }

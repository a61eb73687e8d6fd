package prometheus_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/api"

	"github.com/tailorhq/tailor/internal/metrics/prometheus"
)

// Issue #34: what Prometheus says of a query that failed may quote series
// of any namespace, labels and all. A policy's status carries tailor's
// words for what went wrong and the HTTP status; Prometheus' own words go
// to the manager's log only.
func TestFailureInTailorsWords(t *testing.T) {
	// secret stands for what Prometheus may quote of another namespace.
	const secret = `{namespace="other-team", pod="payments-0"}`
	inJSON := strings.ReplaceAll(secret, `"`, `\"`)
	cases := map[string]struct {
		status int
		body   string
		// slow: the answer comes after the caller's deadline.
		slow       bool
		wantKind   prometheus.FailureKind
		wantStatus int
		wantSaid   string
	}{
		"unreachable": {status: -1, wantKind: prometheus.Unreachable, wantSaid: "Prometheus could not be reached"},
		"timed out":   {slow: true, wantKind: prometheus.Timeout, wantSaid: "Prometheus did not answer in time"},
		"a bad query": {status: http.StatusBadRequest, body: `{"status":"error","errorType":"bad_data","error":"1:5: parse error near ` + inJSON + `"}`,
			wantKind: prometheus.BadQuery, wantStatus: 400, wantSaid: "Prometheus refused the query as invalid (HTTP 400)"},
		"a many-to-many match": {status: http.StatusUnprocessableEntity, body: `{"status":"error","errorType":"execution","error":"found duplicate series for the match group ` + inJSON + `"}`,
			wantKind: prometheus.Evaluation, wantStatus: 422, wantSaid: "Prometheus could not evaluate the query (HTTP 422)"},
		"Prometheus' own timeout": {status: http.StatusUnprocessableEntity, body: `{"status":"error","errorType":"timeout","error":"query timed out reading ` + inJSON + `"}`,
			wantKind: prometheus.Timeout, wantSaid: "Prometheus did not answer in time"},
		"credentials refused": {status: http.StatusForbidden, body: "forbidden: " + secret,
			wantKind: prometheus.Refused, wantStatus: 403, wantSaid: "Prometheus refused tailor's request (HTTP 403)"},
		"a server error": {status: http.StatusServiceUnavailable, body: "upstream " + secret,
			wantKind: prometheus.ServerError, wantStatus: 503, wantSaid: "Prometheus failed to answer (HTTP 503)"},
		"not the Prometheus API": {status: http.StatusOK, body: "<html>" + secret,
			wantKind: prometheus.BadResponse, wantSaid: "Prometheus's answer could not be read"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.slow {
					<-release
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			defer close(release)
			if tc.status == -1 {
				srv.Close()
			}
			c, err := api.NewClient(api.Config{Address: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var logged []string
			ctx := logr.NewContext(context.Background(), funcr.New(func(prefix, args string) {
				mu.Lock()
				defer mu.Unlock()
				logged = append(logged, args)
			}, funcr.Options{}))
			if tc.slow {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 20*time.Millisecond)
				defer cancel()
			}
			_, err = prometheus.NewGuardrails(c).Value(ctx, `up{namespace="team-a"}`, now)
			var f *prometheus.Failure
			if !errors.As(err, &f) {
				t.Fatalf("error %v, want a *Failure", err)
			}
			if diff := cmp.Diff([]any{tc.wantKind, tc.wantStatus}, []any{f.Kind, f.Status}); diff != "" {
				t.Errorf("kind and status (-want,+got):\n%s", diff)
			}
			if !strings.HasPrefix(err.Error(), tc.wantSaid) || strings.Contains(err.Error(), "other-team") {
				t.Errorf("error %q, want one saying %q and nothing of Prometheus' own words", err, tc.wantSaid)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(logged) != 1 || !strings.Contains(logged[0], `"failure"="`+string(tc.wantKind)+`"`) || !strings.Contains(logged[0], `up{namespace=\"team-a\"}`) {
				t.Errorf("logged %q, want one line with the query and the failure's kind", logged)
			}
			if tc.body != "" && tc.wantKind != prometheus.BadResponse && !strings.Contains(logged[0], `other-team`) {
				t.Errorf("logged %q, want Prometheus' own words for the operator", logged)
			}
		})
	}
}

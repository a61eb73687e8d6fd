package gather

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	promapi "github.com/prometheus/client_golang/api"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/canary"
	"github.com/tailorhq/tailor/internal/metrics/prometheus"
	"github.com/tailorhq/tailor/test/builder"
)

// Issue #34: a query guardrail is run with the manager's Prometheus
// credentials, so what it may read is the policy's namespace. One that
// names another is refused before anything is asked, with a reason and a
// message that say what to change; one of the policy's own namespace is
// asked confined to it, and answers; what Prometheus says of a query it
// could not evaluate (which may quote another namespace's series) is not
// what the Canary condition is given.
func TestGuardrailAnswersConfined(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		q := r.Form.Get("query")
		mu.Lock()
		asked = append(asked, q)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(q, "errors_total") {
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprint(w, `{"status":"error","errorType":"execution","error":"found duplicate series for the match group {namespace=\"other-team\", pod=\"payments-0\"}"}`)
			return
		}
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[0,"0.25"]}]}}`)
	}))
	t.Cleanup(srv.Close)
	client, err := promapi.NewClient(promapi.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	r := &Reader{Guardrails: prometheus.NewGuardrails(client)}

	canaryPod := builder.Pod("web-0").Namespace("team-a").UID("u0").Container(builder.Container("app").Requests("100m", "64Mi")).Running().Obj()
	state := canary.State{Pods: []canary.Pod{{UID: "u0", Name: "web-0", LoweredAt: now.Add(-time.Minute),
		Before: canary.Values{"app": {Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}}}}
	policyWith := func(queries ...v1alpha1.CanaryQuery) *v1alpha1.TailorPolicy {
		return &v1alpha1.TailorPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"},
			Spec: v1alpha1.TailorPolicySpec{Behavior: &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownRules{Canary: &v1alpha1.Canary{
				Guardrails: &v1alpha1.CanaryGuardrails{Queries: queries}}}}}}
	}
	threshold := "0.5"
	cases := map[string]struct {
		query      string
		wantReason string
		wantSaid   string
		wantAsked  []string
		wantAnswer canary.QueryAnswer
	}{
		"another namespace: refused, nothing asked": {
			query:      `max(latency{namespace="other-team"})`,
			wantReason: v1alpha1.ReasonQueryOutsideNamespace,
			wantSaid:   `behavior.scaleDown.canary.guardrails.queries: query guardrail latency: the query could read outside the policy's namespace: latency{namespace="other-team"} reads namespace "other-team", not the policy's "team-a"; a policy's queries read only its own namespace: match namespace="{{.Namespace}}", or leave the namespace out and tailor adds it`,
		},
		"the policy's namespace: asked confined, answered": {
			query:      `max(latency{namespace="{{.Namespace}}", pod=~"{{.Pods}}"})`,
			wantAsked:  []string{`max(latency{namespace="team-a",pod=~"web-0"})`},
			wantAnswer: canary.QueryAnswer{Value: 0.25},
		},
		"no namespace: tailor puts it on": {
			query:      `max(latency{pod=~"{{.Pods}}"})`,
			wantAsked:  []string{`max(latency{namespace="team-a",pod=~"web-0"})`},
			wantAnswer: canary.QueryAnswer{Value: 0.25},
		},
		"Prometheus' words stay out of status": {
			query:      `sum(rate(errors_total{pod=~"{{.Pods}}"}[{{.Since}}]))`,
			wantAsked:  []string{`sum(rate(errors_total{namespace="team-a",pod=~"web-0"}[1m]))`},
			wantAnswer: canary.QueryAnswer{Missing: "Prometheus could not evaluate the query (HTTP 422), such as for a many-to-many match or too many samples; aggregate or narrow it"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mu.Lock()
			asked = nil
			mu.Unlock()
			policy := policyWith(v1alpha1.CanaryQuery{Name: "latency", Query: tc.query, Threshold: &threshold})
			spec, err := ParseSpec(policy)
			var got map[string]canary.GuardrailAnswer
			if err == nil {
				got, err = r.guardrailAnswers(context.Background(), policy, spec, state, []*corev1.Pod{canaryPod}, now)
			}
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff(tc.wantAsked, asked); diff != "" {
				t.Errorf("asked Prometheus (-want,+got):\n%s", diff)
			}
			if tc.wantReason != "" {
				var invalid *InvalidPolicyError
				if !errors.As(err, &invalid) || invalid.Reason != tc.wantReason || invalid.Error() != tc.wantSaid {
					t.Fatalf("error %v, want an InvalidPolicyError %s saying %q", err, tc.wantReason, tc.wantSaid)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[string]canary.GuardrailAnswer{"latency": {Canary: tc.wantAnswer}}, got); diff != "" {
				t.Errorf("answers (-want,+got):\n%s", diff)
			}
		})
	}
}

//go:build controller

package controller

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
)

// scriptedPrometheus stands in for the Prometheus the canaries' query
// guardrails ask: it answers /api/v1/query with the value the test set for
// the pods the query names (its pod=~"..." matcher, as tailor rendered
// it), and records every query it was asked.
type scriptedPrometheus struct {
	*httptest.Server
	mu sync.Mutex
	// values by the pods' regular expression: "web-0", "web-1|web-2".
	values map[string]float64
	// status, when not 0, is what every query gets instead of an answer,
	// with body.
	status int
	body   string
	asked  []string
}

var podMatcher = regexp.MustCompile(`pod=~"([^"]*)"`)

func newScriptedPrometheus(t *testing.T) *scriptedPrometheus {
	t.Helper()
	p := &scriptedPrometheus{values: map[string]float64{}}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		_ = r.ParseForm()
		q := r.Form.Get("query")
		p.mu.Lock()
		defer p.mu.Unlock()
		p.asked = append(p.asked, q)
		if p.status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(p.status)
			fmt.Fprint(w, p.body)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		result := ""
		if m := podMatcher.FindStringSubmatch(q); m != nil {
			if v, ok := p.values[m[1]]; ok {
				result = fmt.Sprintf(`{"metric":{},"value":[0,"%g"]}`, v)
			}
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, result)
	}))
	t.Cleanup(p.Close)
	return p
}

// Set is the value of the query for the pods matching pods.
func (p *scriptedPrometheus) Set(pods string, v float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.values[pods] = v
}

// Fail answers every query with HTTP status (0: answer again).
func (p *scriptedPrometheus) Fail(status int) { p.FailWith(status, "scripted outage") }

// FailWith answers every query with HTTP status and body.
func (p *scriptedPrometheus) FailWith(status int, body string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status, p.body = status, body
}

// Asked are the distinct queries asked so far, sorted.
func (p *scriptedPrometheus) Asked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := slices.Clone(p.asked)
	slices.Sort(out)
	return slices.Compact(out)
}

// latencyQuery is the relative guardrail of the query tests: the canary's
// p99 latency no more than 20% above its siblings'.
const latencyQuery = `histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{namespace="{{.Namespace}}", pod=~"{{.Pods}}"}[{{.Since}}])))`

func latencyGuardrail(c *v1alpha1.Canary) {
	c.Guardrails = &v1alpha1.CanaryGuardrails{Queries: []v1alpha1.CanaryQuery{{
		Name: "latency-p99", Query: latencyQuery, TripsWhen: v1alpha1.CanaryQueryAbove, SiblingsPercent: ptrTo[int32](20),
	}}}
}

// Issue #25: a relative query guardrail is asked about the canary pod and
// about its siblings, rendered for each; when the canary's p99 latency
// rises past its siblings' by more than the percent, the canary is raised
// back in place at once, and the event and the condition say by how much.
func TestCanaryQueryGuardrailRollsBack(t *testing.T) {
	prom := newScriptedPrometheus(t)
	e := newEnv(t, controllerOptions{Prometheus: prom.URL})
	prom.Set("web-0", 0.12)
	prom.Set("web-1|web-2", 0.12)
	idleDeployment(e, latencyGuardrail)
	before := metricValue(t, "tailor_canary_rollbacks_total", map[string]string{"namespace": e.ns, "policy": "web", "guardrail": "Query"})
	e.untilCanary()
	if asked := prom.Asked(); len(asked) != 0 {
		t.Errorf("asked %q before any canary pod was watched, want nothing", asked)
	}
	e.sync("web")
	// Lowered one sync (10s) ago: the range reads what followed. Sent
	// confined to the policy's namespace, as the parser writes it out.
	sent := `histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{namespace="` + e.ns + `",pod=~"PODS"}[10s])))`
	want := []string{
		strings.ReplaceAll(sent, "PODS", "web-0"),
		strings.ReplaceAll(sent, "PODS", "web-1|web-2"),
	}
	if diff := cmp.Diff(want, prom.Asked()); diff != "" {
		t.Errorf("queries asked (-want,+got):\n%s", diff)
	}
	if got := e.cpuOf("web-0"); got[0] == "500m" {
		t.Fatalf("web-0 back at 500m with the canary's latency at its siblings': %s", e.events)
	}
	prom.Set("web-0", 0.31)
	e.sync("web")
	if diff := cmp.Diff([]string{"500m", "500m", "500m"}, e.cpuOf("web-0", "web-1", "web-2")); diff != "" {
		t.Fatalf("the sync after the canary's latency rose: CPU requests (-want,+got):\n%s%s", diff, e.events)
	}
	const said = "guardrail latency-p99: canary 0.31 vs siblings 0.12 (+158%, max +20%)"
	var rolled []event
	for _, ev := range e.events.all() {
		if ev.reason == "CanaryRolledBack" {
			rolled = append(rolled, ev)
		}
	}
	if len(rolled) != 1 || !strings.Contains(rolled[0].note, said) {
		t.Errorf("CanaryRolledBack events %+v, want one saying %q", rolled, said)
	}
	if c := e.webCondition(v1alpha1.ConditionCanary); c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.CanaryReasonRolledBack || !strings.Contains(c.Message, said) {
		t.Errorf("Canary condition %s %s: %q, want True RolledBack saying %q", c.Status, c.Reason, c.Message, said)
	}
	if got := metricValue(t, "tailor_canary_rollbacks_total", map[string]string{"namespace": e.ns, "policy": "web", "guardrail": "Query"}) - before; got != 1 {
		t.Errorf("tailor_canary_rollbacks_total{guardrail=Query} grew by %v, want 1", got)
	}
	for range 30 {
		e.sync("web")
		if diff := cmp.Diff([]string{"500m", "500m", "500m"}, e.cpuOf("web-0", "web-1", "web-2")); diff != "" {
			t.Fatalf("%s after the rollback, within its backoff: CPU requests (-want,+got):\n%s", e.elapsed(), diff)
		}
	}
}

// Issue #25, the control: a canary whose query guardrails hold (a relative
// one within its percent, an absolute one under its threshold) is promoted
// at the end of its window, and the others follow.
func TestCanaryQueryGuardrailHolds(t *testing.T) {
	prom := newScriptedPrometheus(t)
	e := newEnv(t, controllerOptions{Prometheus: prom.URL})
	prom.Set("web-0", 0.13)
	prom.Set("web-1|web-2", 0.12)
	idleDeployment(e, latencyGuardrail, func(c *v1alpha1.Canary) {
		c.Guardrails.Queries = append(c.Guardrails.Queries, v1alpha1.CanaryQuery{
			Name: "latency-max", Query: `max(lat{pod=~"{{.Pods}}"})`, Threshold: ptrTo("0.5")})
	})
	lowered := e.untilCanary()
	start := e.elapsed()
	for e.elapsed()-start < canaryWindow+4*syncPeriod {
		e.sync("web")
	}
	if diff := cmp.Diff([]string{lowered, lowered, lowered}, e.cpuOf("web-0", "web-1", "web-2")); diff != "" {
		t.Errorf("after the canary's window: CPU requests (-want,+got):\n%s%s", diff, e.events)
	}
	if c := e.webCondition(v1alpha1.ConditionCanary); c.Reason != v1alpha1.CanaryReasonPromoted {
		t.Errorf("Canary condition %s %s: %q, want Promoted", c.Status, c.Reason, c.Message)
	}
	// The query named no namespace: it was asked about the policy's.
	if !slices.Contains(prom.Asked(), `max(lat{namespace="`+e.ns+`",pod=~"web-0"})`) {
		t.Errorf("queries asked %q, want the absolute one for web-0, in the policy's namespace, among them", prom.Asked())
	}
}

// Issue #25: a Prometheus that answers errors neither trips the guardrail
// nor lets the canary be promoted: past its window the canary is held, the
// others wait, and the condition says which query has no answer and why.
// Once Prometheus answers within the bound, the canary is promoted.
func TestCanaryQueryGuardrailUnansweredHolds(t *testing.T) {
	prom := newScriptedPrometheus(t)
	e := newEnv(t, controllerOptions{Prometheus: prom.URL})
	prom.Set("web-0", 0.12)
	prom.Set("web-1|web-2", 0.12)
	idleDeployment(e, latencyGuardrail)
	lowered := e.untilCanary()
	prom.Fail(http.StatusServiceUnavailable)
	start := e.elapsed()
	for e.elapsed()-start < 2*canaryWindow {
		e.sync("web")
		if got := e.cpuOf("web-0", "web-1", "web-2"); got[0] != lowered || got[1] != "500m" || got[2] != "500m" {
			t.Fatalf("%s into the canary with Prometheus down: CPU requests %v, want web-0 at %s, the others at 500m%s", e.elapsed()-start, got, lowered, e.events)
		}
	}
	c := e.webCondition(v1alpha1.ConditionCanary)
	if c.Reason != v1alpha1.CanaryReasonWatching || !strings.Contains(c.Message, "held past their window") || !strings.Contains(c.Message, "latency-p99 (canary pods: Prometheus failed to answer (HTTP 503)") {
		t.Errorf("Canary condition %s %s: %q, want Watching, held past the window for latency-p99's server error", c.Status, c.Reason, c.Message)
	}
	if n := e.events.count("web", "CanaryRolledBack") + e.events.count("web", "CanaryPromoted"); n != 0 {
		t.Errorf("%d rollbacks or promotions with Prometheus down, want none:%s", n, e.events)
	}
	prom.Fail(0)
	e.syncs("web", 4)
	if diff := cmp.Diff([]string{lowered, lowered, lowered}, e.cpuOf("web-0", "web-1", "web-2")); diff != "" {
		t.Errorf("once Prometheus answered: CPU requests (-want,+got):\n%s%s", diff, e.events)
	}
}

// A query guardrail that cannot be judged is the user's to fix, and says
// so on the policy's Ready condition before any canary: a template that
// does not parse, or a manager with no Prometheus to ask. Such a policy
// lowers nothing.
func TestCanaryQueryGuardrailNotReady(t *testing.T) {
	prom := newScriptedPrometheus(t)
	cases := map[string]struct {
		prometheus string
		query      string
		reason     string
		said       string
	}{
		"a template that does not parse": {prometheus: prom.URL, query: `lat{pod=~"{{.Pods"}`, reason: v1alpha1.ReasonInvalidPolicy,
			said: "behavior.scaleDown.canary.guardrails.queries: query guardrail latency-p99 is not a valid template"},
		"a field the template does not know": {prometheus: prom.URL, query: `lat{pod=~"{{.Pod}}"}`, reason: v1alpha1.ReasonInvalidPolicy,
			said: "the template knows {{.Namespace}}, {{.Pods}} and {{.Since}}"},
		"no Prometheus": {query: latencyQuery, reason: v1alpha1.ReasonGuardrailsNeedPrometheus,
			said: "need a Prometheus to ask, and the manager has none: start it with --prometheus-url"},
		// Issue #34: the manager's credentials read every namespace.
		"another namespace": {prometheus: prom.URL, query: `max(http_errors{namespace="other-team"})`, reason: v1alpha1.ReasonQueryOutsideNamespace,
			said: `query guardrail latency-p99: the query could read outside the policy's namespace: http_errors{namespace="other-team"} reads namespace "other-team"`},
		"namespaces by a pattern": {prometheus: prom.URL, query: `max(http_errors{namespace=~".+", pod=~"{{.Pods}}"})`, reason: v1alpha1.ReasonQueryOutsideNamespace,
			said: `matches namespaces with namespace=~".+", which could read others than the policy's`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, controllerOptions{Prometheus: tc.prometheus})
			idleDeployment(e, latencyGuardrail, func(c *v1alpha1.Canary) { c.Guardrails.Queries[0].Query = tc.query })
			e.syncs("web", 12)
			r := condition(e.getPolicy("web"), v1alpha1.ConditionReady)
			if r == nil || r.Status != metav1.ConditionFalse || r.Reason != tc.reason || !strings.Contains(r.Message, tc.said) {
				t.Errorf("Ready %+v, want False %s saying %q", r, tc.reason, tc.said)
			}
			if diff := cmp.Diff([]string{"500m", "500m", "500m"}, e.cpuOf("web-0", "web-1", "web-2")); diff != "" {
				t.Errorf("CPU requests (-want,+got):\n%s", diff)
			}
			if n := e.events.count("web", "InvalidPolicy"); n == 0 {
				t.Errorf("no InvalidPolicy event:%s", e.events)
			}
		})
	}
	for _, q := range prom.Asked() {
		if strings.Contains(q, "other-team") || strings.Contains(q, `".+"`) {
			t.Errorf("Prometheus was asked %s, which the policy's namespace does not confine", q)
		}
	}
}

// Issue #34: what Prometheus says of a query it could not evaluate may
// quote series of other namespaces, labels and all. The Canary condition
// says what went wrong in tailor's words, with the HTTP status; Prometheus'
// own words are the manager's log's.
func TestCanaryQueryGuardrailPrometheusWordsStayOut(t *testing.T) {
	prom := newScriptedPrometheus(t)
	e := newEnv(t, controllerOptions{Prometheus: prom.URL})
	prom.Set("web-0", 0.12)
	prom.Set("web-1|web-2", 0.12)
	idleDeployment(e, latencyGuardrail)
	e.untilCanary()
	prom.FailWith(http.StatusUnprocessableEntity,
		`{"status":"error","errorType":"execution","error":"found duplicate series for the match group {namespace=\"other-team\", pod=\"payments-0\"}"}`)
	e.syncs("web", 2)
	const said = "latency-p99 (canary pods: Prometheus could not evaluate the query (HTTP 422), such as for a many-to-many match or too many samples; aggregate or narrow it)"
	p := e.getPolicy("web")
	c := condition(p, v1alpha1.ConditionCanary)
	if c == nil || c.Reason != v1alpha1.CanaryReasonWatching || !strings.Contains(c.Message, said) {
		t.Errorf("Canary condition %+v, want Watching saying %q", c, said)
	}
	for _, c := range p.Status.Conditions {
		if strings.Contains(c.Message, "other-team") || strings.Contains(c.Message, "duplicate series") {
			t.Errorf("condition %s carries Prometheus' own words: %q", c.Type, c.Message)
		}
	}
	for _, ev := range e.events.all() {
		if strings.Contains(ev.note, "other-team") {
			t.Errorf("event %s carries Prometheus' own words: %q", ev.reason, ev.note)
		}
	}
}

// The query guardrails' fields are checked by the apiserver.
func TestCanaryQueryValidation(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	const field = "spec.behavior.scaleDown.canary.guardrails.queries[0]"
	q := func(f func(*v1alpha1.CanaryQuery)) v1alpha1.Canary {
		c := v1alpha1.CanaryQuery{Name: "latency", Query: "up", SiblingsPercent: ptrTo[int32](20)}
		f(&c)
		return v1alpha1.Canary{Guardrails: &v1alpha1.CanaryGuardrails{Queries: []v1alpha1.CanaryQuery{c}}}
	}
	// Issue #34: at most four guardrails are asked each sync.
	five := q(func(*v1alpha1.CanaryQuery) {})
	for _, name := range []string{"b", "c", "d", "e"} {
		five.Guardrails.Queries = append(five.Guardrails.Queries, v1alpha1.CanaryQuery{Name: name, Query: "up", Threshold: ptrTo("1")})
	}
	const exactlyOne = field + ": Invalid value: a query guardrail needs exactly one of threshold (an absolute value) and siblingsPercent (relative to the workload's other pods)"
	cases := map[string]struct {
		canary v1alpha1.Canary
		want   string
	}{
		"both bounds":        {canary: q(func(c *v1alpha1.CanaryQuery) { c.Threshold = ptrTo("1") }), want: exactlyOne},
		"no bound":           {canary: q(func(c *v1alpha1.CanaryQuery) { c.SiblingsPercent = nil }), want: exactlyOne},
		"a word threshold":   {canary: q(func(c *v1alpha1.CanaryQuery) { c.SiblingsPercent, c.Threshold = nil, ptrTo("high") }), want: field + ".threshold: Invalid value: \"high\""},
		"an empty query":     {canary: q(func(c *v1alpha1.CanaryQuery) { c.Query = "" }), want: field + ".query: Invalid value: \"\""},
		"an upper-case name": {canary: q(func(c *v1alpha1.CanaryQuery) { c.Name = "Latency" }), want: field + ".name: Invalid value: \"Latency\""},
		"below by 150%": {canary: q(func(c *v1alpha1.CanaryQuery) {
			c.TripsWhen, c.SiblingsPercent = v1alpha1.CanaryQueryBelow, ptrTo[int32](150)
		}),
			want: field + ": Invalid value: with tripsWhen Below, siblingsPercent is at most 100"},
		"a long query": {canary: q(func(c *v1alpha1.CanaryQuery) { c.Query = strings.Repeat("x", 1025) }), want: field + ".query: Too long: may not be more than 1024 bytes"},
		"five queries": {canary: five, want: "spec.behavior.scaleDown.canary.guardrails.queries: Too many: 5: must have at most 4 items"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			causes := validationCauses(dryRunPolicy(e, tc.canary))
			if len(causes) == 0 || !strings.HasPrefix(causes[0], tc.want) {
				t.Errorf("refusal %q, want one starting %q", causes, tc.want)
			}
		})
	}
	ok := q(func(c *v1alpha1.CanaryQuery) { c.SiblingsPercent, c.Threshold = nil, ptrTo("1.5e-3") })
	if err := dryRunPolicy(e, ok); err != nil {
		t.Errorf("an absolute guardrail refused: %v", err)
	}
}

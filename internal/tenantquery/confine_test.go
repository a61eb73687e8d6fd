package tenantquery

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/promql/parser"
)

func TestConfine(t *testing.T) {
	cases := map[string]struct {
		query string
		want  string
	}{
		"a bare metric name": {
			query: `up`,
			want:  `up{namespace="team-a"}`,
		},
		"the policy's namespace, kept once": {
			query: `up{namespace="team-a", pod=~"web-0|web-1"}`,
			want:  `up{namespace="team-a",pod=~"web-0|web-1"}`,
		},
		"the namespace twice": {
			query: `up{namespace="team-a", namespace="team-a"}`,
			want:  `up{namespace="team-a"}`,
		},
		"a regular expression that is the namespace's name": {
			query: `up{namespace=~"team-a"}`,
			want:  `up{namespace="team-a"}`,
		},
		"a quoted label name": {
			query: `{"namespace"="team-a", __name__="up"}`,
			want:  `{__name__="up",namespace="team-a"}`,
		},
		"every metric of the namespace": {
			query: `count({__name__=~".+"})`,
			want:  `count({__name__=~".+",namespace="team-a"})`,
		},
		"the guardrail of the docs, rendered": {
			query: `histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{namespace="team-a", pod=~"web-0"}[150s])))`,
			want:  `histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{namespace="team-a",pod=~"web-0"}[2m30s])))`,
		},
		"both sides of a binary operation, with matching": {
			query: `sum by (pod) (rate(errors_total[1m])) / on (pod) group_left sum by (pod) (rate(requests_total[1m]))`,
			want:  `sum by (pod) (rate(errors_total{namespace="team-a"}[1m])) / on (pod) group_left () sum by (pod) (rate(requests_total{namespace="team-a"}[1m]))`,
		},
		"a subquery, offset and @": {
			query: `max_over_time(rate(x[1m] offset 5m)[10m:30s] @ 1700000000)`,
			want:  `max_over_time(rate(x{namespace="team-a"}[1m] offset 5m)[10m:30s] @ 1700000000.000)`,
		},
		"an aggregation's parameter": {
			query: `topk(scalar(max(k)), x)`,
			want:  `topk(scalar(max(k{namespace="team-a"})), x{namespace="team-a"})`,
		},
		"absent and a label_replace": {
			query: `absent(label_replace(up, "namespace", "x", "", ""))`,
			want:  `absent(label_replace(up{namespace="team-a"}, "namespace", "x", "", ""))`,
		},
		"a number": {
			query: `1 + 2`,
			want:  `1 + 2`,
		},
		"a vector of a scalar": {
			query: `vector(time())`,
			want:  `vector(time())`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Confine(tc.query, "team-a")
			if err != nil {
				t.Fatalf("Confine: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("confined (-want,+got):\n%s", diff)
			}
			if err := Check(got, "team-a"); err != nil {
				t.Errorf("Check of what Confine returned: %v", err)
			}
			again, err := Confine(got, "team-a")
			if err != nil || again != got {
				t.Errorf("confined again: %q, %v; want it unchanged", again, err)
			}
		})
	}
}

func TestConfineRefuses(t *testing.T) {
	cases := map[string]struct {
		query     string
		namespace string
		wantIs    error
		wantSaid  string
	}{
		"another namespace": {
			query:    `up{namespace="other-team"}`,
			wantIs:   ErrOutsideNamespace,
			wantSaid: `up{namespace="other-team"} reads namespace "other-team", not the policy's "team-a"; a policy's queries read only its own namespace: match namespace="{{.Namespace}}", or leave the namespace out and tailor adds it`,
		},
		"another namespace, deep in a subquery": {
			query:    `sum(rate(up{namespace="team-a"}[1m])) + max_over_time(sum(up{namespace="other-team"})[5m:1m])`,
			wantIs:   ErrOutsideNamespace,
			wantSaid: `reads namespace "other-team"`,
		},
		"another namespace beside the policy's": {
			query:  `up{namespace="team-a", namespace="other-team"}`,
			wantIs: ErrOutsideNamespace, wantSaid: `reads namespace "other-team"`,
		},
		"not the namespace": {
			query: `up{namespace!="team-a"}`, wantIs: ErrOutsideNamespace,
			wantSaid: `matches namespaces with namespace!="team-a", which could read others than the policy's "team-a"`,
		},
		"not another namespace": {
			query: `up{namespace!="other-team"}`, wantIs: ErrOutsideNamespace, wantSaid: `namespace!="other-team"`,
		},
		"any namespace": {
			query: `up{namespace=~".+"}`, wantIs: ErrOutsideNamespace, wantSaid: `namespace=~".+"`,
		},
		"a pattern that matches the namespace and more": {
			query: `up{namespace=~"team-a|other-team"}`, wantIs: ErrOutsideNamespace, wantSaid: `namespace=~"team-a|other-team"`,
		},
		"the namespace's name, any case": {
			query: `up{namespace=~"(?i)team-a"}`, wantIs: ErrOutsideNamespace, wantSaid: `namespace=~"(?i)team-a"`,
		},
		"a prefix": {
			query: `up{namespace=~"team-a.*"}`, wantIs: ErrOutsideNamespace, wantSaid: `namespace=~"team-a.*"`,
		},
		"a negated pattern": {
			query: `up{namespace!~"kube-.*"}`, wantIs: ErrOutsideNamespace, wantSaid: `namespace!~"kube-.*"`,
		},
		"no namespace label at all": {
			query: `up{namespace=""}`, wantIs: ErrOutsideNamespace, wantSaid: `reads namespace ""`,
		},
		// info() joins the info metric's series, which the query does not
		// select; the stable parser does not know it.
		"info()": {
			query: `info(rate(http_requests_total[1m]))`, wantIs: ErrNotPromQL, wantSaid: `info`,
		},
		"an experimental aggregation": {
			query: `limitk(1, up)`, wantIs: ErrNotPromQL, wantSaid: `limitk`,
		},
		"not PromQL": {
			query: `up{pod="web"`, wantIs: ErrNotPromQL, wantSaid: "parse error",
		},
		"no namespace to confine to": {
			query: `up`, namespace: "-", wantIs: ErrOutsideNamespace, wantSaid: "no namespace to confine it to",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns := tc.namespace
			switch ns {
			case "":
				ns = "team-a"
			case "-":
				ns = ""
			}
			got, err := Confine(tc.query, ns)
			if err == nil {
				t.Fatalf("Confine = %q, want a refusal", got)
			}
			if !errors.Is(err, tc.wantIs) {
				t.Errorf("refusal %v does not wrap %v", err, tc.wantIs)
			}
			if !strings.Contains(err.Error(), tc.wantSaid) {
				t.Errorf("refusal %q, want one saying %q", err, tc.wantSaid)
			}
		})
	}
}

// TestFunctionsClassified reads the parser's function list: every function
// of the stable language must have been judged to read only its arguments,
// or a bump of the parser that adds one fails here until someone has.
// info() must never be among them.
func TestFunctionsClassified(t *testing.T) {
	var unjudged []string
	for name, f := range parser.Functions {
		if !f.Experimental && !readsOnlyArguments[name] {
			unjudged = append(unjudged, name)
		}
	}
	if len(unjudged) > 0 {
		t.Errorf("functions of the stable language not classified: %q; add each to readsOnlyArguments once it is known to read no series but its arguments", unjudged)
	}
	for name := range readsOnlyArguments {
		if _, ok := parser.Functions[name]; !ok {
			t.Errorf("readsOnlyArguments names %s(), which the parser does not know", name)
		}
	}
	if readsOnlyArguments["info"] {
		t.Error("info() reads an info metric it is not given, and must be refused")
	}
}

// TestWalkRefusesImplicitSeries builds the call the parser does not make
// from a policy's query (info() is experimental): walk refuses it, so that
// turning experimental functions on cannot let it through.
func TestWalkRefusesImplicitSeries(t *testing.T) {
	call := &parser.Call{Func: parser.Functions["info"], Args: parser.Expressions{&parser.VectorSelector{Name: "up"}}}
	err := confine(call, "team-a")
	if !errors.Is(err, ErrOutsideNamespace) || !strings.Contains(err.Error(), "info() is not a function tailor knows") {
		t.Errorf("confine(info(up)) = %v, want a refusal naming info()", err)
	}
}

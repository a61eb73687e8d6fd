package tenantquery

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/tailorhq/tailor/internal/propertytest"
)

const own = "team-a"

// TestConfineProperties draws random PromQL (selectors with random
// matchers, nested in functions, aggregations, binary operations,
// subqueries, with offsets and @) and checks what must hold of any: a query
// that names no namespace but the policy's is confined, one that could read
// another is refused; what Confine returns parses, every selector in it
// (found by the parser's own walk, not Confine's) carries exactly the
// equality to the policy's namespace, and the other matchers of each
// selector are those the query had. The check is shown to catch a selector
// left without the matcher, or with one that matches more, in every query
// drawn that has a selector.
func TestConfineProperties(t *testing.T) {
	cases := 3000
	if propertytest.Race {
		cases = 600
	}
	g := gen{r: rand.New(rand.NewPCG(3, 4))}
	var accepted, refused int
	for i := range cases {
		g.foreign = false
		q := g.vector(4)
		got, err := Confine(q, own)
		if g.foreign {
			if !errors.Is(err, ErrOutsideNamespace) && !errors.Is(err, ErrNotPromQL) {
				t.Fatalf("case %d: %s\nnames another namespace or an implicit read, and Confine = %q, %v; want a refusal", i, q, got, err)
			}
			refused++
			continue
		}
		if err != nil {
			t.Fatalf("case %d: %s\nnames no other namespace, and Confine refused it: %v", i, q, err)
		}
		accepted++
		if err := confined(got); err != nil {
			t.Fatalf("case %d: %s\nconfined to %s\n%v", i, q, got, err)
		}
		if diff := cmp.Diff(otherMatchers(t, q), otherMatchers(t, got)); diff != "" {
			t.Fatalf("case %d: %s\nconfined to %s\nthe other matchers changed (-query,+confined):\n%s", i, q, got, diff)
		}
		if sabotaged, ok := sabotage(t, got, g.r); ok && confined(sabotaged) == nil {
			t.Fatalf("case %d: the check passed %s, which has a selector not confined to %s", i, sabotaged, own)
		}
	}
	// Both sides must be drawn often, or the property says little.
	if accepted < cases/5 || refused < cases/5 {
		t.Errorf("%d accepted and %d refused of %d: the generator draws one side too rarely", accepted, refused, cases)
	}
}

// confined is the property's check, written apart from Confine's: the
// parser finds the selectors.
func confined(query string) error {
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(query)
	if err != nil {
		return fmt.Errorf("does not parse: %w", err)
	}
	for _, sel := range parser.ExtractSelectors(expr) {
		var ns []*labels.Matcher
		for _, m := range sel {
			if m.Name == "namespace" {
				ns = append(ns, m)
			}
		}
		if len(ns) != 1 || ns[0].Type != labels.MatchEqual || ns[0].Value != own {
			return fmt.Errorf("a selector's namespace matchers are %v, want exactly namespace=%q", ns, own)
		}
	}
	return nil
}

// otherMatchers are each selector's matchers but the namespace's, sorted.
func otherMatchers(t *testing.T, query string) [][]string {
	t.Helper()
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	var out [][]string
	for _, sel := range parser.ExtractSelectors(expr) {
		ms := []string{}
		for _, m := range sel {
			if m.Name != "namespace" {
				ms = append(ms, m.String())
			}
		}
		slices.Sort(ms)
		out = append(out, ms)
	}
	return out
}

// sabotage undoes the confinement of one selector of query, chosen at
// random: its namespace matcher dropped, or widened to a pattern. False
// when query has no selector.
func sabotage(t *testing.T, query string, r *rand.Rand) (string, bool) {
	t.Helper()
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	var sels []*parser.VectorSelector
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			sels = append(sels, vs)
		}
		return nil
	})
	if len(sels) == 0 {
		return "", false
	}
	vs := sels[r.IntN(len(sels))]
	widen := r.IntN(2) == 0
	kept := vs.LabelMatchers[:0]
	for _, m := range vs.LabelMatchers {
		switch {
		case m.Name != "namespace":
			kept = append(kept, m)
		case widen:
			kept = append(kept, labels.MustNewMatcher(labels.MatchRegexp, "namespace", own+"|other-team"))
		}
	}
	if len(kept) == 0 {
		// A selector needs one matcher; any does.
		kept = append(kept, labels.MustNewMatcher(labels.MatchEqual, "job", "api"))
	}
	vs.LabelMatchers = kept
	return expr.String(), true
}

// gen draws PromQL text of a given type. foreign records that what it drew
// could read another namespace (or reads series implicitly), so must be
// refused.
type gen struct {
	r       *rand.Rand
	foreign bool
}

// pick is one of s. Each of s is built before the pick, so none may be
// drawn: what was drawn and not picked would still have set foreign.
func (g *gen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

// namespaceMatcher is a matcher of the namespace label: the policy's own,
// as the template writes it or otherwise, or one that could match another.
func (g *gen) namespaceMatcher() string {
	if g.r.IntN(2) == 0 {
		return g.pick(`namespace="`+own+`"`, `namespace=~"`+own+`"`, `"namespace"="`+own+`"`)
	}
	g.foreign = true
	return g.pick(`namespace="other-team"`, `namespace!="`+own+`"`, `namespace!="other-team"`,
		`namespace=~".+"`, `namespace=~"team-.*"`, `namespace=~"`+own+`|other-team"`, `namespace=~"(?i)TEAM-A"`,
		`namespace!~"kube-system"`, `namespace=""`, `"namespace"="other-team"`)
}

// selector is an instant vector selector with random matchers.
func (g *gen) selector() string {
	name := g.pick("up", "http_requests_total", "lat_bucket", "container_cpu_usage_seconds_total", "")
	var ms []string
	if name == "" {
		ms = append(ms, g.pick(`__name__="up"`, `__name__=~"lat_.+"`))
	}
	for range g.r.IntN(3) {
		ms = append(ms, g.pick(`pod=~"web-0|web-1"`, `job="api"`, `container!=""`, `le="0.5"`, `pod!~"canary-.*"`))
	}
	// Most selectors say nothing of the namespace, as most queries do;
	// a few say it twice.
	for range g.r.IntN(4) / 2 {
		ms = append(ms, g.namespaceMatcher())
	}
	g.r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	s := name
	if len(ms) > 0 || name == "" {
		s += "{" + strings.Join(ms, ", ") + "}"
	}
	return s
}

// modifiers are an optional @ and offset, in either order.
func (g *gen) modifiers() string {
	var m []string
	if g.r.IntN(4) == 0 {
		m = append(m, g.pick("offset 5m", "offset 1h30m"))
	}
	if g.r.IntN(5) == 0 {
		m = append(m, g.pick("@ 1700000000", "@ end()", "@ start()"))
	}
	g.r.Shuffle(len(m), func(i, j int) { m[i], m[j] = m[j], m[i] })
	if len(m) == 0 {
		return ""
	}
	return " " + strings.Join(m, " ")
}

// matrix is a range vector: a selector's range, or a subquery.
func (g *gen) matrix(depth int) string {
	if depth > 0 && g.r.IntN(3) == 0 {
		return "(" + g.vector(depth-1) + ")" + g.pick("[5m:30s]", "[10m:]", "[1h:5m]") + g.modifiers()
	}
	return g.selector() + g.pick("[1m]", "[5m]", "[150s]") + g.modifiers()
}

func (g *gen) scalar(depth int) string {
	if depth <= 0 {
		return g.pick("0.5", "2", "1e3", "time()")
	}
	switch g.r.IntN(4) {
	case 0:
		return "scalar(" + g.vector(depth-1) + ")"
	case 1:
		return "(" + g.scalar(depth-1) + ") " + g.pick("+", "*", "-") + " (" + g.scalar(depth-1) + ")"
	}
	return g.pick("0.99", "3", "time()")
}

func (g *gen) vector(depth int) string {
	if depth <= 0 {
		if g.r.IntN(8) == 0 {
			return "vector(" + g.scalar(0) + ")"
		}
		return g.selector() + g.modifiers()
	}
	d := depth - 1
	switch g.r.IntN(12) {
	case 0:
		return g.selector() + g.modifiers()
	case 1:
		return g.pick("rate", "increase", "max_over_time", "avg_over_time", "deriv", "changes", "absent_over_time") + "(" + g.matrix(d) + ")"
	case 2:
		return g.pick("sum", "max", "min", "count", "avg") + g.pick("", " by (pod)", " without (le)", " by (namespace, pod)") + " (" + g.vector(d) + ")"
	case 3:
		k := "3"
		if g.r.IntN(2) == 0 {
			k = "scalar(" + g.vector(d) + ")"
		}
		return g.pick("topk", "bottomk") + "(" + k + ", " + g.vector(d) + ")"
	case 4:
		return g.pick(`quantile(0.9, `, `count_values("value", `) + g.vector(d) + ")"
	case 5:
		// Operands in parentheses: precedence is not what is tested.
		return "(" + g.vector(d) + ") " + g.pick("+", "-", "*", "/", ">", "< bool") + g.pick("", " on (pod)", " ignoring (le)") + " (" + g.vector(d) + ")"
	case 6:
		return "(" + g.vector(d) + ") " + g.pick("and", "or", "unless") + g.pick("", " on (pod)") + " (" + g.vector(d) + ")"
	case 7:
		return "(" + g.vector(d) + ") " + g.pick("*", "/", "+") + " (" + g.scalar(d) + ")"
	case 8:
		return "histogram_quantile(" + g.scalar(0) + ", " + g.vector(d) + ")"
	case 9:
		return fmt.Sprintf(g.pick(`label_replace(%s, "dst", "$1", "pod", "(.*)")`, "absent(%s)", "abs(%s)", "timestamp(%s)",
			"clamp_min(%s, 0)", "sort_desc(%s)", "-%s", "(%s)"), g.vector(d))
	case 10:
		if g.r.IntN(10) == 0 {
			// A function that reads series it is not given: refused
			// whatever its argument names.
			g.foreign = true
			return "info(" + g.vector(d) + ")"
		}
		return "vector(" + g.scalar(d) + ")"
	}
	return "max_over_time(" + g.matrix(d) + ") " + g.pick("-", "/") + " (" + g.vector(d) + ")"
}

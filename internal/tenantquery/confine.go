package tenantquery

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Label is the label a series' namespace is read from: the one cAdvisor,
// kube-state-metrics and the Prometheus Operator's relabelling give the
// series of a namespace's pods, and the one prom-label-proxy enforces.
const Label = "namespace"

// ErrOutsideNamespace wraps every refusal of a query that parses but could
// read series of another namespace: one that names another, matches
// namespaces by a pattern or a negation, or calls a function that reads
// series it does not select. ErrNotPromQL wraps the refusal of a query
// that does not parse.
var (
	ErrOutsideNamespace = errors.New("the query could read outside the policy's namespace")
	ErrNotPromQL        = errors.New("the query is not PromQL")
)

// promql parses the stable language only: experimental functions (info()
// among them), duration expressions and the other opt-in syntax stay
// refused, as a Prometheus that has not enabled them refuses them.
var promql = parser.NewParser(parser.Options{})

// Confine returns query with namespace="<namespace>" on every series
// selector it holds, however deep (in a function's arguments, an
// aggregation, either side of a binary operation, a subquery, a selector
// with @ or offset), written out again as PromQL. A selector that already
// matches the namespace keeps only that one matcher, as an equality; one
// that could match any other namespace (another name, !=, or a =~ or !~
// that is not exactly the namespace's name) is refused, as is a function
// that reads series it is not given. The refusal says what to change and
// wraps ErrOutsideNamespace, or ErrNotPromQL for a query that does not
// parse.
//
// What is returned has been parsed again and checked, so a difference
// between how the query was read and how it is written out refuses it
// rather than sending it.
func Confine(query, namespace string) (string, error) {
	if namespace == "" {
		// namespace="" matches the series that have no namespace label:
		// the node's, the cluster's.
		return "", fmt.Errorf("%w: no namespace to confine it to", ErrOutsideNamespace)
	}
	expr, err := promql.ParseExpr(query)
	if err != nil {
		return "", notPromQL(err)
	}
	if err := confine(expr, namespace); err != nil {
		return "", err
	}
	out := expr.String()
	if err := Check(out, namespace); err != nil {
		return "", fmt.Errorf("%w: written out again as %q, it no longer reads as confined (%w); write it more plainly", ErrOutsideNamespace, out, err)
	}
	return out, nil
}

// Check says whether query, parsed, holds exactly one namespace matcher on
// each of its selectors, an equality to namespace, and calls no function
// that reads series it is not given: what Confine returns, and what is
// safe to send.
func Check(query, namespace string) error {
	expr, err := promql.ParseExpr(query)
	if err != nil {
		return notPromQL(err)
	}
	return walk(expr, func(vs *parser.VectorSelector) error {
		var n int
		for _, m := range vs.LabelMatchers {
			if m.Name != Label {
				continue
			}
			n++
			if m.Type != labels.MatchEqual || m.Value != namespace {
				return fmt.Errorf("selector %s matches %s", vs, m)
			}
		}
		if n != 1 {
			return fmt.Errorf("selector %s has %d namespace matchers, want one", vs, n)
		}
		return nil
	})
}

// confine rewrites, in place, every selector of expr to match namespace
// alone.
func confine(expr parser.Expr, namespace string) error {
	return walk(expr, func(vs *parser.VectorSelector) error {
		kept := make([]*labels.Matcher, 0, len(vs.LabelMatchers)+1)
		for _, m := range vs.LabelMatchers {
			if m.Name != Label {
				kept = append(kept, m)
				continue
			}
			if !onlyMatches(m, namespace) {
				return outside(vs, m, namespace)
			}
		}
		eq, err := labels.NewMatcher(labels.MatchEqual, Label, namespace)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrOutsideNamespace, err)
		}
		vs.LabelMatchers = append(kept, eq)
		return nil
	})
}

// walk calls each for every series selector under node, depth first,
// stopping at the first error. A node it does not know, or a function that
// reads series it is not given, is refused: what is not looked at cannot
// be confined.
func walk(node parser.Node, each func(*parser.VectorSelector) error) error {
	switch n := node.(type) {
	case *parser.VectorSelector:
		return each(n)
	case *parser.MatrixSelector:
		return walk(n.VectorSelector, each)
	case *parser.SubqueryExpr:
		return walk(n.Expr, each)
	case *parser.ParenExpr:
		return walk(n.Expr, each)
	case *parser.UnaryExpr:
		return walk(n.Expr, each)
	case *parser.StepInvariantExpr:
		return walk(n.Expr, each)
	case *parser.BinaryExpr:
		if err := walk(n.LHS, each); err != nil {
			return err
		}
		return walk(n.RHS, each)
	case *parser.AggregateExpr:
		if n.Param != nil {
			if err := walk(n.Param, each); err != nil {
				return err
			}
		}
		return walk(n.Expr, each)
	case *parser.Call:
		if !readsOnlyArguments[n.Func.Name] {
			return fmt.Errorf("%w: %s() is not a function tailor knows to read only the series it is given, so it cannot be confined to the policy's namespace; take it out", ErrOutsideNamespace, n.Func.Name)
		}
		for _, a := range n.Args {
			if err := walk(a, each); err != nil {
				return err
			}
		}
		return nil
	case *parser.NumberLiteral, *parser.StringLiteral:
		return nil
	}
	return fmt.Errorf("%w: tailor does not know the PromQL construct %s (%T), so it cannot confine it; write the query without it", ErrOutsideNamespace, node, node)
}

// onlyMatches reports whether m can match namespace and no other value:
// an equality to it, or a regular expression that is its name and nothing
// more (Prometheus anchors it).
func onlyMatches(m *labels.Matcher, namespace string) bool {
	switch m.Type {
	case labels.MatchEqual:
		return m.Value == namespace
	case labels.MatchRegexp:
		re, err := syntax.Parse(m.Value, syntax.Perl)
		if err != nil {
			return false
		}
		return re.Op == syntax.OpLiteral && re.Flags&syntax.FoldCase == 0 && string(re.Rune) == namespace
	}
	return false
}

// outside is the refusal of selector vs for its namespace matcher m.
func outside(vs *parser.VectorSelector, m *labels.Matcher, namespace string) error {
	const fix = `a policy's queries read only its own namespace: match namespace="{{.Namespace}}", or leave the namespace out and tailor adds it`
	if m.Type == labels.MatchEqual {
		return fmt.Errorf("%w: %s reads namespace %q, not the policy's %q; %s", ErrOutsideNamespace, vs, m.Value, namespace, fix)
	}
	return fmt.Errorf("%w: %s matches namespaces with %s, which could read others than the policy's %q; %s", ErrOutsideNamespace, vs, m, namespace, fix)
}

// notPromQL is the refusal of a query the parser refused: its first
// complaint (ParseErrors says only the first), which quotes only the
// query's own text.
func notPromQL(err error) error {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return fmt.Errorf("%w: %s; correct it", ErrNotPromQL, msg)
}

// readsOnlyArguments are the functions of the parser's stable language
// that read no series but those of their arguments, so that confining the
// arguments confines the call. A function missing here is refused: info()
// (experimental, and refused by the parser as such) joins series of an
// info metric it names itself, and a function a newer parser adds is
// refused until someone has read what it does (TestFunctionsClassified
// fails on the bump).
var readsOnlyArguments = map[string]bool{
	"abs": true, "absent": true, "absent_over_time": true, "acos": true, "acosh": true,
	"asin": true, "asinh": true, "atan": true, "atanh": true, "avg_over_time": true,
	"ceil": true, "changes": true, "clamp": true, "clamp_max": true, "clamp_min": true,
	"cos": true, "cosh": true, "count_over_time": true, "days_in_month": true,
	"day_of_month": true, "day_of_week": true, "day_of_year": true, "deg": true,
	"delta": true, "deriv": true, "exp": true, "floor": true, "histogram_avg": true,
	"histogram_count": true, "histogram_sum": true, "histogram_stddev": true,
	"histogram_stdvar": true, "histogram_fraction": true, "histogram_quantile": true,
	"hour": true, "idelta": true, "increase": true, "irate": true, "label_replace": true,
	"label_join": true, "last_over_time": true, "ln": true, "log10": true, "log2": true,
	"max_over_time": true, "min_over_time": true, "minute": true, "month": true, "pi": true,
	"predict_linear": true, "present_over_time": true, "quantile_over_time": true,
	"rad": true, "rate": true, "resets": true, "round": true, "scalar": true, "sgn": true,
	"sin": true, "sinh": true, "sort": true, "sort_desc": true, "sqrt": true,
	"stddev_over_time": true, "stdvar_over_time": true, "sum_over_time": true, "tan": true,
	"tanh": true, "time": true, "timestamp": true, "vector": true, "year": true,
}

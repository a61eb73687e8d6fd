package prometheus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"text/template"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/tailorhq/tailor/internal/tenantquery"
)

// GuardrailData is what a canary's query guardrail template sees
// (behavior.scaleDown.canary.guardrails.queries).
type GuardrailData struct {
	// Namespace of the policy, for namespace="{{.Namespace}}".
	Namespace string
	// Pods matches exactly the pods judged (the canary pods, or their
	// siblings), for pod=~"{{.Pods}}".
	Pods string
	// Since is the time since the canary pods' lowering as a PromQL
	// duration in whole seconds, at least 1s, such as 150s: a range of it
	// reads only what followed the lowering.
	Since string
}

// GuardrailQuery is a query guardrail's template, parsed, for one policy's
// namespace: every query it renders is confined to it.
type GuardrailQuery struct {
	t         *template.Template
	namespace string
}

// ParseGuardrail parses a query guardrail's template for the policy of
// namespace and renders it once, so that a reference to a field
// GuardrailData lacks, or a query that could read another namespace, fails
// here, where the policy is checked, and not at the canary's first
// judgement. A query refused for reading outside namespace wraps
// tenantquery.ErrOutsideNamespace.
func ParseGuardrail(name, text, namespace string) (*GuardrailQuery, error) {
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("query guardrail %s: the query is empty; give a PromQL template", name)
	}
	t, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("query guardrail %s is not a valid template: %w; correct it", name, err)
	}
	g := &GuardrailQuery{t: t, namespace: namespace}
	if _, err := g.Render([]string{"pod"}, time.Minute); err != nil {
		var exec template.ExecError
		if errors.As(err, &exec) {
			return nil, fmt.Errorf("query guardrail %s: %w; the template knows {{.Namespace}}, {{.Pods}} and {{.Since}}", name, err)
		}
		return nil, fmt.Errorf("query guardrail %s: %w", name, err)
	}
	return g, nil
}

// Render is the query for the named pods of the guardrail's namespace,
// since the time since the canary pods' lowering, confined to the
// namespace (tenantquery.Confine): what is sent to Prometheus.
func (g *GuardrailQuery) Render(pods []string, since time.Duration) (string, error) {
	var b bytes.Buffer
	err := g.t.Execute(&b, GuardrailData{
		Namespace: promString(g.namespace),
		Pods:      podsRegex(pods),
		// Whole seconds, which every Prometheus parses; a range of 0 is
		// refused.
		Since: fmt.Sprintf("%ds", max(1, int64(since/time.Second))),
	})
	if err != nil {
		return "", fmt.Errorf("render template %s: %w", g.t.Name(), err)
	}
	return tenantquery.Confine(b.String(), g.namespace)
}

// Guardrails asks Prometheus a query guardrail's one value.
type Guardrails struct {
	api promv1.API
}

// NewGuardrails asks the Prometheus client talks to (NewClient).
func NewGuardrails(client api.Client) *Guardrails {
	return &Guardrails{api: promv1.NewAPI(client)}
}

// ErrNoValue wraps every answer that is not one number: no series, several,
// NaN, or a range vector or string. The query ran; it did not say how the
// pods are doing.
var ErrNoValue = errors.New("no value")

// Value runs query at at and returns its one value: a scalar, or the one
// sample of an instant vector. An answer without exactly one number wraps
// ErrNoValue and says what came back; a query Prometheus did not answer
// (unreachable, refusing, timed out, a query it cannot parse) is a
// *Failure, which says so in tailor's words and logs Prometheus' own.
// +Inf and -Inf are values (histogram_quantile's answer above the highest
// bucket).
func (g *Guardrails) Value(ctx context.Context, query string, at time.Time) (float64, error) {
	val, _, err := g.api.Query(ctx, query, at)
	if err != nil {
		return 0, failed(ctx, err, "query", query)
	}
	var v float64
	switch val := val.(type) {
	case *model.Scalar:
		v = float64(val.Value)
	case model.Vector:
		if len(val) != 1 {
			return 0, fmt.Errorf("%w: %d series, want one (aggregate them, with sum, max or histogram_quantile)", ErrNoValue, len(val))
		}
		v = float64(val[0].Value)
	default:
		return 0, fmt.Errorf("%w: a %s, want a scalar or an instant vector of one series", ErrNoValue, val.Type())
	}
	if math.IsNaN(v) {
		return 0, fmt.Errorf("%w: NaN (e.g. a rate of nothing, or a quantile of no requests)", ErrNoValue)
	}
	return v, nil
}

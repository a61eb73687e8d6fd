package gather

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/canary"
	"github.com/tailorhq/tailor/internal/metrics/prometheus"
	"github.com/tailorhq/tailor/internal/tenantquery"
)

// GuardrailQuerier asks Prometheus a query guardrail's one value at a time
// (prometheus.Guardrails).
type GuardrailQuerier interface {
	Value(ctx context.Context, query string, at time.Time) (float64, error)
}

// QueryReason is the Ready condition's reason for a policy's PromQL
// template that cannot be run: QueryOutsideNamespace for one that could
// read another namespace than the policy's, InvalidPolicy for any other
// fault (a template that does not parse, a query that is not PromQL).
func QueryReason(err error) string {
	if errors.Is(err, tenantquery.ErrOutsideNamespace) {
		return v1alpha1.ReasonQueryOutsideNamespace
	}
	return v1alpha1.ReasonInvalidPolicy
}

// GuardrailsTimeout bounds the asking of one policy's query guardrails in
// one sync.
const GuardrailsTimeout = 15 * time.Second

// guardrailAnswers asks the policy's query guardrails (spec.Guardrails)
// about its canary pods (and, for a relative one, about its other pods),
// for the decision to judge: part of gather, it only reads. Nothing is
// asked while no canary pod is watched. A manager with no Prometheus to
// ask is an InvalidPolicyError, checked at every sync so that it shows
// before the first canary, as ParseSpec's are.
//
// What is asked is bounded: at most MaxCanaryQueries guardrails (Validate
// refuses a spec with more), each asked at most twice a sync.
func (r *Reader) guardrailAnswers(ctx context.Context, policy *v1alpha1.TailorPolicy, spec Spec, state canary.State, pods []*corev1.Pod, now time.Time) (map[string]canary.GuardrailAnswer, error) {
	if len(spec.Guardrails) == 0 {
		return nil, nil
	}
	queries, parsed := policy.Spec.Behavior.ScaleDown.Canary.Guardrails.Queries, spec.Guardrails
	if r.Guardrails == nil {
		return nil, &InvalidPolicyError{Reason: v1alpha1.ReasonGuardrailsNeedPrometheus,
			Err: fmt.Errorf("behavior.scaleDown.canary.guardrails.queries need a Prometheus to ask, and the manager has none: start it with --prometheus-url, or take the queries out")}
	}
	live := canary.LivePods(state, pods)
	if len(live) == 0 || policy.Spec.Mode() == v1alpha1.UpdateModeOff {
		return nil, nil
	}
	inCanary := map[types.UID]bool{}
	var canaryNames, others []string
	var lowered time.Time
	for _, c := range live {
		inCanary[c.UID] = true
		canaryNames = append(canaryNames, c.Name)
		if c.LoweredAt.After(lowered) {
			lowered = c.LoweredAt
		}
	}
	for _, p := range pods {
		if !inCanary[p.UID] {
			others = append(others, p.Name)
		}
	}
	sort.Strings(canaryNames)
	sort.Strings(others)
	since := now.Sub(lowered)
	// One deadline for all of them: a Prometheus that hangs costs the sync
	// this much, not each query's timeout over again. What is not asked in
	// time has no answer, which holds the canary.
	ctx, cancel := context.WithTimeout(ctx, GuardrailsTimeout)
	defer cancel()
	out := make(map[string]canary.GuardrailAnswer, len(queries))
	for i, q := range queries {
		a := canary.GuardrailAnswer{Canary: r.askGuardrail(ctx, q.Name, parsed[i], canaryNames, since, now)}
		if q.SiblingsPercent != nil {
			a.Siblings = canary.QueryAnswer{Missing: "the workload has no pod besides the canary pods to compare with"}
			if len(others) > 0 {
				a.Siblings = r.askGuardrail(ctx, q.Name, parsed[i], others, since, now)
			}
		}
		out[q.Name] = a
	}
	return out, nil
}

// askGuardrail is one query's answer for pods, or why there is none, in
// tailor's words (a *prometheus.Failure for what Prometheus did not
// answer).
func (r *Reader) askGuardrail(ctx context.Context, name string, g *prometheus.GuardrailQuery, pods []string, since time.Duration, now time.Time) canary.QueryAnswer {
	q, err := g.Render(pods, since)
	if err != nil {
		// ParseGuardrail rendered it once: only a template that fails on
		// some data could get here.
		return canary.QueryAnswer{Missing: err.Error()}
	}
	v, err := r.Guardrails.Value(ctx, q, now)
	if err != nil {
		log.FromContext(ctx).V(1).Info("query guardrail unanswered", "guardrail", name, "query", q, "err", err.Error())
		return canary.QueryAnswer{Missing: err.Error()}
	}
	return canary.QueryAnswer{Value: v}
}

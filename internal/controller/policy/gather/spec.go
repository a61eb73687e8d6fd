package gather

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/canary"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/limits"
	"github.com/tailorhq/tailor/internal/metrics/prometheus"
)

// Spec is what a sync reads of the policy's spec, parsed once: the steps
// that need a part of it are given it rather than parsing the spec again.
type Spec struct {
	// Selector is a selector policy's own selector; nil for a targetRef
	// policy, whose selector is its target's (Reader.Selector).
	Selector labels.Selector
	// Limits are the policy's change windows and lowering budgets.
	Limits limits.Config
	// Canary is behavior.scaleDown.canary; HasCanary is false without one.
	Canary    canary.Config
	HasCanary bool
	// Guardrails are the canary's query guardrails, in the spec's order,
	// confined to the policy's namespace.
	Guardrails []*prometheus.GuardrailQuery
}

// ParseSpec validates the policy's spec and parses what a sync reads of
// it. What does not parse is an InvalidPolicyError, checked at every sync
// so that a query guardrail that could read another namespace shows before
// the first canary: such a policy is left alone rather than promoting
// canaries no query watched.
func ParseSpec(policy *v1alpha1.TailorPolicy) (Spec, error) {
	if err := policy.Spec.Validate(); err != nil {
		return Spec{}, &InvalidPolicyError{Reason: v1alpha1.ReasonInvalidPolicy, Err: err}
	}
	var out Spec
	var err error
	// A time zone or a cron field the CRD's rules cannot judge.
	if out.Limits, _, err = limits.ConfigOf(&policy.Spec); err != nil {
		return Spec{}, &InvalidPolicyError{Reason: v1alpha1.ReasonInvalidPolicy, Err: err}
	}
	if s := policy.Spec.Selector; s != nil {
		if out.Selector, err = metav1.LabelSelectorAsSelector(s); err != nil {
			return Spec{}, &InvalidPolicyError{Reason: v1alpha1.ReasonInvalidSelector, Err: fmt.Errorf("selector: %w", err)}
		}
	}
	out.Canary, out.HasCanary = canary.ConfigOf(&policy.Spec)
	if !out.HasCanary || len(out.Canary.Queries) == 0 {
		return out, nil
	}
	for _, q := range policy.Spec.Behavior.ScaleDown.Canary.Guardrails.Queries {
		g, err := prometheus.ParseGuardrail(q.Name, q.Query, policy.Namespace)
		if err != nil {
			return Spec{}, &InvalidPolicyError{Reason: QueryReason(err),
				Err: fmt.Errorf("behavior.scaleDown.canary.guardrails.queries: %w", err)}
		}
		out.Guardrails = append(out.Guardrails, g)
	}
	return out, nil
}

package policy

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/controller/policy/gather"
	"github.com/tailorhq/tailor/internal/controller/policy/store"
	"github.com/tailorhq/tailor/internal/metrics"
)

// EventMetricsOverridesIgnored is sent on a policy whose query overrides
// the manager's metrics source has no use for.
const EventMetricsOverridesIgnored = "MetricsOverridesIgnored"

// prepareSource gives state the source the policy's usage is read through.
// It runs once per generation, so queries are compiled, and the event saying
// they are ignored is sent, once per spec change, not once per sync.
func (r *Reconciler) prepareSource(policy *v1alpha1.TailorPolicy, state *store.PolicyState) error {
	src, ignored, err := policySource(r.Source, policy.Namespace, &policy.Spec)
	if err != nil {
		return err
	}
	state.Source, state.MetricsIgnored = src, ignored
	if ignored != "" {
		r.Events.Eventf(policy, nil, corev1.EventTypeWarning, EventMetricsOverridesIgnored, "Validate", "%s", ignored)
	}
	return nil
}

// usageSource is the source state's pods are read through.
func (r *Reconciler) usageSource(state *store.PolicyState) metrics.Source {
	if state.Source != nil {
		return state.Source
	}
	return r.Source
}

// policySource derives from the manager's source one that runs the policy's
// query overrides; nil when the policy sets none. Overrides the source
// cannot take are not a mistake in the policy, which still works on the
// source's own data: ignored says so, for the Ready condition. The
// queries are confined to namespace, the policy's. A template that cannot
// be used, or could read another namespace, is the user's to fix, an
// gather.InvalidPolicyError.
func policySource(base metrics.Source, namespace string, spec *v1alpha1.TailorPolicySpec) (src metrics.Source, ignored string, err error) {
	if spec.Metrics == nil || spec.Metrics.Prometheus == nil {
		return nil, "", nil
	}
	q := spec.Metrics.Prometheus
	o := metrics.QueryOverrides{CPU: q.CPU, Memory: q.Memory, Throttled: q.Throttled, Timestamp: q.Timestamp}
	if o == (metrics.QueryOverrides{}) {
		return nil, "", nil
	}
	o.Namespace = namespace
	// Only the Prometheus source is Templated.
	t, ok := base.(metrics.Templated)
	if !ok {
		return nil, fmt.Sprintf("spec.metrics.prometheus is ignored: the manager reads usage from %s, not from Prometheus (--metrics-source=prometheus)", base.Name()), nil
	}
	src, err = t.WithQueries(o)
	if err != nil {
		return nil, "", &gather.InvalidPolicyError{Reason: gather.QueryReason(err),
			Err: fmt.Errorf("spec.metrics.prometheus: %w; correct it, or leave it out to use the manager's query", err)}
	}
	return src, "", nil
}

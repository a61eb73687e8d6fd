package policy

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/controller/policy/policymetrics"
)

// reportCanary sends the events of what the policy's canary did this sync
// (autoscale.DecideSync decided it) and counts its rollbacks. Each is about
// the policy, where people look for a workload's story, and names the pod.
func (r *Reconciler) reportCanary(policy *v1alpha1.TailorPolicy, c autoscale.CanaryOutcome) {
	for _, e := range c.Events {
		typ := corev1.EventTypeNormal
		if e.Reason == autoscale.EventCanaryRolledBack {
			typ = corev1.EventTypeWarning
			policymetrics.CanaryRollbacksTotal.WithLabelValues(policy.Namespace, policy.Name, string(e.Guardrail)).Inc()
		}
		if e.Pod == nil {
			r.Events.Eventf(policy, nil, typ, e.Reason, "Canary", "%s", e.Message)
			continue
		}
		r.Events.Eventf(policy, e.Pod, typ, e.Reason, "Canary", "pod %s: %s", e.Pod.Name, e.Message)
	}
}

// setCanaryCondition writes the Canary condition of a policy with a canary,
// and takes it away from one without: a policy that never had one shows
// no such condition.
func setCanaryCondition(status *v1alpha1.TailorPolicyStatus, c autoscale.CanaryOutcome, gen int64) {
	if !c.Active {
		meta.RemoveStatusCondition(&status.Conditions, v1alpha1.ConditionCanary)
		return
	}
	setCondition(status, v1alpha1.ConditionCanary, c.Status, c.Reason, c.Message, gen)
}

// canaryCheckpoint is the canary's state as the TailorCheckpoint keeps it,
// nil when there is nothing to keep. Times are kept to the second.
func canaryCheckpoint(s autoscale.CanaryState) *v1alpha1.CanaryCheckpoint {
	if s.IsZero() {
		return nil
	}
	out := &v1alpha1.CanaryCheckpoint{
		Pods: canaryPodsCheckpoint(s.Pods), Revert: canaryPodsCheckpoint(s.Revert),
		Proven: canaryValuesCheckpoint(s.Proven),
		Trips:  s.Trips, LastResult: s.LastResult, Learnt: truncate(s.Learnt, 1024),
	}
	if !s.HoldUntil.IsZero() {
		// Rounded up: a hold is never cut short by a restart.
		t := metav1.NewTime(s.HoldUntil.Add(time.Second - 1).Truncate(time.Second))
		out.HoldUntil = &t
	}
	return out
}

func canaryPodsCheckpoint(pods []autoscale.CanaryPod) []v1alpha1.CanaryPodCheckpoint {
	var out []v1alpha1.CanaryPodCheckpoint
	for _, p := range pods {
		out = append(out, v1alpha1.CanaryPodCheckpoint{
			UID: string(p.UID), Name: p.Name, LoweredAt: metav1.NewTime(p.LoweredAt.Truncate(time.Second)), Ready: p.Ready,
			Before: canaryValuesCheckpoint(p.Before), Restarts: p.Restarts,
		})
	}
	return out
}

func canaryValuesCheckpoint(v autoscale.CanaryValues) []v1alpha1.CanaryValues {
	names := make([]string, 0, len(v))
	for n := range v {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []v1alpha1.CanaryValues
	for _, n := range names {
		out = append(out, v1alpha1.CanaryValues{Name: n, Requests: v[n].Requests, Limits: v[n].Limits})
	}
	return out
}

// canaryState is the canary's state restored from a checkpoint; a
// checkpoint written before canaries existed has none, the zero state.
func canaryState(c *v1alpha1.CanaryCheckpoint) autoscale.CanaryState {
	if c == nil {
		return autoscale.CanaryState{}
	}
	out := autoscale.CanaryState{
		Pods: canaryPodsState(c.Pods), Revert: canaryPodsState(c.Revert),
		Proven: canaryValuesState(c.Proven),
		Trips:  c.Trips, LastResult: c.LastResult, Learnt: c.Learnt,
	}
	if c.HoldUntil != nil {
		out.HoldUntil = c.HoldUntil.Time
	}
	return out
}

func canaryPodsState(pods []v1alpha1.CanaryPodCheckpoint) []autoscale.CanaryPod {
	var out []autoscale.CanaryPod
	for _, p := range pods {
		out = append(out, autoscale.CanaryPod{
			UID: types.UID(p.UID), Name: p.Name, LoweredAt: p.LoweredAt.Time, Ready: p.Ready,
			Before: canaryValuesState(p.Before), Restarts: p.Restarts,
		})
	}
	return out
}

func canaryValuesState(v []v1alpha1.CanaryValues) autoscale.CanaryValues {
	if len(v) == 0 {
		return nil
	}
	out := autoscale.CanaryValues{}
	for _, c := range v {
		out[c.Name] = corev1.ResourceRequirements{Requests: c.Requests, Limits: c.Limits}
	}
	return out
}

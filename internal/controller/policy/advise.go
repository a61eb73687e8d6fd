package policy

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/internal/advise"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/controller/policy/gather"
	"github.com/tailorhq/tailor/internal/controller/policy/store"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/podcontainers"
)

// advise learns from what gather read (usage, terminations, the metrics
// source's answer) and asks the learnt state about each pod: its targets,
// with the startup boost's, become the decision's pods.
func (r *Reconciler) advise(policy *v1alpha1.TailorPolicy, in *syncInput, now time.Time) error {
	state := in.state
	if err := state.Model.Configure(&policy.Spec, in.pods); err != nil {
		var invalid *advise.ConfigError
		if errors.As(err, &invalid) {
			return &gather.InvalidPolicyError{Reason: v1alpha1.ReasonInvalidPolicy, Err: invalid.Err}
		}
		return err
	}
	in.wasDown, in.wasRejecting = state.MetricsErr != nil, state.Rejecting
	state.MetricsErr, state.Problems = in.usageErr, in.usage.Problems
	in.views = make([]advise.Pod, 0, len(in.pods))
	for _, p := range in.pods {
		ps := state.Pod(p)
		in.views = append(in.views, advise.Pod{Pod: p, Memory: &ps.Memory, LastResize: ps.LastResize, Class: in.read.Classes[p.Spec.NodeName]})
	}
	state.Model.Learn(&policy.Spec, in.views, in.usage, now)
	for i, p := range in.pods {
		ps := state.Pod(p)
		if last := gather.LastResize(p); last.After(ps.LastResize) {
			// A resize this process did not send, or sent before it
			// restarted: the pod's own record says when.
			ps.LastResize = last
		}
		in.views[i].LastResize = ps.LastResize
		a := state.Model.Advise(advise.Input{
			Spec: &policy.Spec, Pod: in.views[i], Usage: in.usage,
			Holds: in.decision.Holds, Template: state.Template, FieldManager: actuator.FieldManager, Now: now,
		})
		// The reaction-latency clock runs from the oldest evidence for a
		// raise not yet sent.
		switch {
		case a.RaiseSince.IsZero():
			ps.RaiseSince = time.Time{}
		case ps.RaiseSince.IsZero() || a.RaiseSince.Before(ps.RaiseSince):
			ps.RaiseSince = a.RaiseSince
		}
		if len(a.BoostRaise) > 0 {
			in.boostRaise[p.UID] = a.BoostRaise
		}
		for _, n := range a.NotBoosted {
			in.notBoosted[n] = true
		}
		in.advice[p.UID] = a
		in.decision.Pods = append(in.decision.Pods, fleet.PodInput{
			Pod: p, Targets: a.Targets, PodTarget: a.PodTarget, Early: a.Early, WorkingSet: a.WorkingSet, JVM: a.JVM,
			LastResize: ps.LastResize, InFlight: gather.InFlight(p), ResizeRefused: gather.Refused(p), RaiseSince: ps.RaiseSince, Boost: a.Boost,
			Throttled: throttledSince(p, in.usage, ps.LastResize),
			Preempt:   r.preempts(policy, ps, now), Deferred: gather.DeferredSince(p),
		})
		if ps.NoRoomMade && policy.Spec.Preempts() {
			switch {
			case !r.AllowPreemption:
				in.preemptionRefused = fmt.Sprintf("pod %s: behavior.scaleUp.preemption is PreemptLowerPriority, but this manager runs without --allow-resize-preemption: its raise is cut to the node's free room", p.Name)
			case r.PreemptionUnavailable != "":
				in.preemptionRefused = fmt.Sprintf("pod %s: behavior.scaleUp.preemption is PreemptLowerPriority, but the scheduler does not preempt for a deferred resize on this cluster (%s): its raise is cut to the node's free room", p.Name, r.PreemptionUnavailable)
			}
		}
	}
	return nil
}

// throttledSince is each container's throttled share of CFS periods, for
// the figures measured wholly after since (the pod's last resize): one
// reaching back before it was measured under other limits.
func throttledSince(p *corev1.Pod, usage metrics.Result, since time.Time) map[string]float64 {
	var out map[string]float64
	for _, c := range podcontainers.Names(p) {
		u, ok := usage.Usage[metrics.Key{Namespace: p.Namespace, Pod: p.Name, Container: c}]
		if !ok || u.Throttled == nil || !u.ThrottledSince.After(since) {
			continue
		}
		if out == nil {
			out = map[string]float64{}
		}
		out[c] = *u.Throttled
	}
	return out
}

// preempts says whether the pod's raise may be sent beyond its node's free
// room for the scheduler to preempt for: the policy asks for it, the
// manager allows it, the cluster's scheduler can, no room could be made in
// place at the last sync, and no such raise was taken back within
// fleet.PreemptionBackoff.
func (r *Reconciler) preempts(policy *v1alpha1.TailorPolicy, ps *store.PodState, now time.Time) bool {
	return r.AllowPreemption && r.PreemptionUnavailable == "" && policy.Spec.Preempts() && ps.NoRoomMade &&
		(ps.CutBackAt.IsZero() || now.Sub(ps.CutBackAt) >= fleet.PreemptionBackoff)
}

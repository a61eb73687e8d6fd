package policy

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/internal/advise"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/controller/policy/gather"
	"github.com/tailorhq/tailor/internal/controller/policy/policymetrics"
	"github.com/tailorhq/tailor/internal/controller/policy/store"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/observation"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/podcontainers"
)

// act carries out a policy's decision (autoscale.DecideSync): it reports how
// earlier resizes ended, replaces the unschedulable pods that are due, says
// once per state what is held back and why, evicts in mode
// InPlaceOrRecreate, and sends the resizes. It returns when to look again.
func (r *Reconciler) act(ctx context.Context, policy *v1alpha1.TailorPolicy, in *syncInput, d autoscale.SyncDecision, now time.Time) (time.Duration, error) {
	state := in.state
	r.announce(policy, in)
	blocked := map[string]string{}
	// Errors one pod meets are collected, not returned at once: the other
	// pods are still served and status still written.
	var errs []error
	requeue := r.SyncPeriod
	sooner := func(after time.Duration) {
		if after > 0 && after < requeue {
			requeue = after
		}
	}
	sooner(d.RetryAfter)
	inFlightNow := 0
	for _, p := range in.pods {
		r.observeResize(policy, state, p, now)
		if gather.InFlight(p) {
			inFlightNow++
		}
	}
	if d.StuckSeen != nil {
		if err := r.replaceStuck(ctx, policy, in, d, blocked); err != nil {
			errs = append(errs, err)
		}
		sooner(d.StuckRetry)
	}
	mode := policy.Spec.Mode()
	if mode == v1alpha1.UpdateModeOff {
		in.blocked = blocked
		policymetrics.ResizesInFlight.WithLabelValues(policy.Namespace, policy.Name).Set(float64(inFlightNow))
		return requeue, nil
	}
	held := map[string]autoscale.Held{}
	for _, h := range d.Held {
		held[h.Pod.Name] = h
	}
	settled := map[string]autoscale.Settled{}
	for _, st := range d.Settled {
		settled[st.Pod.Name] = st
	}
	recreate := map[string]autoscale.RecreateStepOf{}
	for _, st := range d.Recreate {
		recreate[st.Pod.Name] = st
	}
	for _, p := range in.pods {
		ps := state.Pod(p)
		dec := d.Decisions[p.Name]
		r.reportSkips(policy, ps, p, dec, blocked)
		if h, ok := held[p.Name]; ok {
			r.reportHeld(policy, ps, p, h, blocked)
		}
		if st, ok := settled[p.Name]; ok {
			ps.ShortSince = time.Time{}
			if st.DropEntry {
				state.DropPendingRecreation(p)
			}
			continue
		}
		if len(dec.Short) == 0 {
			continue
		}
		if step, ok := recreate[p.Name]; ok {
			evicted, retry, err := r.recreate(ctx, policy, in, step, now, blocked)
			if err != nil {
				// One pod's failure holds that pod, not the policy.
				errs = append(errs, err)
				r.reportFailure(policy, ps, p, "Evict", err, blocked)
				continue
			}
			if evicted {
				continue
			}
			sooner(retry)
		}
		if !dec.Empty() {
			msg := shortText(dec.Short)
			blocked[string(podchange.SkipNoRoom)] = msg
			key := "capped"
			for _, s := range dec.Short {
				key += ":" + s.Container + "/" + string(s.Resource) + "=" + s.Wanted.String()
			}
			r.reportOnce(ps, p, policy, key, EventResizeCapped, msg)
		}
	}
	r.reportMemoryAtRisk(policy, in, d.PolicyDecision, held)
	r.reportCanary(policy, d.Canary)
	for _, a := range d.Sends {
		retry, err := r.send(ctx, policy, state, a.Action, actuator.ApplyOptions{FieldManager: a.FieldManager}, now, blocked)
		if err != nil {
			errs = append(errs, err)
			r.reportFailure(policy, state.Pod(a.Pod), a.Pod, "Resize", err, blocked)
			continue
		}
		if retry == 0 {
			inFlightNow++
		}
		sooner(retry)
	}
	if len(d.Held) > 0 {
		// A held pod is due again when a resize in flight finishes, which
		// its pod's update event announces; the sync period is the backstop.
		sooner(r.SyncPeriod)
	}
	for _, p := range in.pods {
		state.Pod(p).SettleReports()
	}
	policymetrics.ResizesInFlight.WithLabelValues(policy.Namespace, policy.Name).Set(float64(inFlightNow))
	in.blocked = blocked
	return requeue, errors.Join(errs...)
}

// announce sends the events of what gather and advise found standing: a
// checkpoint that could not be read back, the metrics source down, back or
// incomplete, and another policy or a VerticalPodAutoscaler sizing some of
// the policy's pods.
func (r *Reconciler) announce(policy *v1alpha1.TailorPolicy, in *syncInput) {
	if in.state.RestoreUnsaid {
		r.Events.Eventf(policy, nil, corev1.EventTypeWarning, EventCheckpointInvalid, "Restore", "%s", in.state.RestoreProblem)
		in.state.RestoreUnsaid = false
	}
	r.reportOwners(policy, in.state, in.own)
	r.reportMetrics(policy, in.state, in.wasDown, in.wasRejecting)
}

// reportFailure says, once per standing state, that a pod's resize or
// eviction failed in a way a retry may fix (an apiserver error, a timeout).
func (r *Reconciler) reportFailure(policy *v1alpha1.TailorPolicy, ps *store.PodState, p *corev1.Pod, action string, err error, blocked map[string]string) {
	msg := fmt.Sprintf("pod %s: %v", p.Name, err)
	blocked["Failed"+action] = msg
	if r.reportOnce(ps, p, policy, "failed:"+action, EventResizeFailed, msg) {
		policymetrics.ResizesTotal.WithLabelValues(policy.Namespace, policy.Name, "failed").Inc()
	}
}

// reportSkips turns a pod's skipped changes into the ResizesBlocked reasons
// and one event per state.
func (r *Reconciler) reportSkips(policy *v1alpha1.TailorPolicy, ps *store.PodState, p *corev1.Pod, dec podchange.Decision, blocked map[string]string) {
	for _, s := range dec.Skips {
		switch s.Reason {
		case podchange.SkipRestartNotAllowed, podchange.SkipNotRequested, podchange.SkipQoSChange, podchange.SkipPodLevelLimit:
			blocked[string(s.Reason)] = s.Message
			r.reportOnce(ps, p, policy, "skip:"+string(s.Reason)+s.Container, EventResizeSkipped, s.Message)
		case podchange.SkipNoRoom:
			msg := fmt.Sprintf("container %s: %s", s.Container, s.Message)
			blocked[string(s.Reason)] = msg
			if r.reportOnce(ps, p, policy, "nodefull:"+s.Container+string(s.Resource), EventResizeDeferred, "not sent: "+msg) {
				policymetrics.ResizesTotal.WithLabelValues(policy.Namespace, policy.Name, "deferred").Inc()
			}
		}
	}
}

// reportHeld says why a pod's change waits.
func (r *Reconciler) reportHeld(policy *v1alpha1.TailorPolicy, ps *store.PodState, p *corev1.Pod, h autoscale.Held, blocked map[string]string) {
	switch h.Reason {
	case autoscale.HoldInFlight:
		// Its own resize is being applied: nothing to report.
	case autoscale.HoldMaxConcurrent, autoscale.HoldCanary, autoscale.HoldCanaryBackoff, autoscale.HoldOutsideWindow, autoscale.HoldBudget, autoscale.HoldNamespaceBudget:
		// Pacing, the canary, change windows and the budget hold
		// lowerings by design: the conditions say so, no event per pod.
		blocked[string(h.Reason)] = h.Message
	case autoscale.HoldNodeUnknown:
		blocked[string(h.Reason)] = "pod " + p.Name + ": " + h.Message
	case autoscale.HoldRefused:
		blocked[string(h.Rule)] = h.Message
		if r.reportOnce(ps, p, policy, "refused:"+string(h.Rule), EventResizeRefused, "not sent: "+h.Message) {
			policymetrics.ResizesTotal.WithLabelValues(policy.Namespace, policy.Name, "refused").Inc()
		}
	case autoscale.HoldNamespaceRules:
		msg := "not sent: " + h.Message
		blocked[string(h.Reason)] = "pod " + p.Name + ": " + msg
		if r.reportOnce(ps, p, policy, "nsrules", EventResizeRefused, msg) {
			policymetrics.ResizesTotal.WithLabelValues(policy.Namespace, policy.Name, "refused").Inc()
		}
	case autoscale.HoldNoRoom:
		msg := "not sent: " + h.Message
		blocked[string(h.Reason)] = msg
		if r.reportOnce(ps, p, policy, "nodefull", EventResizeDeferred, msg) {
			policymetrics.ResizesTotal.WithLabelValues(policy.Namespace, policy.Name, "deferred").Inc()
		}
	}
}

// send applies one resize. It returns 0 when it was sent, else when to try
// again.
func (r *Reconciler) send(ctx context.Context, policy *v1alpha1.TailorPolicy, state *store.PolicyState, a autoscale.Action, opts actuator.ApplyOptions, now time.Time, blocked map[string]string) (time.Duration, error) {
	p := a.Pod
	ps := state.Pod(p)
	applied, err := r.Actuator.Apply(ctx, p, a.Plan.Patch, opts)
	if err != nil {
		if apierrors.IsNotFound(err) {
			// Deleted since it was listed: nothing to resize.
			return time.Second, nil
		}
		var refusal *actuator.Refusal
		if !errors.As(err, &refusal) {
			return 0, err
		}
		if refusal.Kind == actuator.RefusedConflict {
			// The pod changed under us: decide again from the new one.
			return time.Second, nil
		}
		blocked["Refused"+string(refusal.Kind)] = refusal.Error()
		if r.reportOnce(ps, p, policy, "apiserver:"+string(refusal.Kind), EventResizeRefused, refusal.Error()) {
			policymetrics.ResizesTotal.WithLabelValues(policy.Namespace, policy.Name, "refused").Inc()
			r.mark(policy, observation.ResizeMark{Time: now, Pod: p.Name, Result: observation.ResultRefused, Change: describe(a.Decision) + ": " + refusal.Error()})
		}
		return r.SyncPeriod, nil
	}
	ps.LastResize, ps.ResizeGeneration, ps.Outcome = now, applied.Generation, ""
	ps.SentRaiseSince = time.Time{}
	if a.Decision.Raises() {
		ps.SentRaiseSince = ps.RaiseSince
		ps.RaiseSince = time.Time{}
	}
	ps.Change = describe(a.Decision)
	ps.Result, ps.Message = string(actuator.StateProposed), ps.Change
	policymetrics.ResizesTotal.WithLabelValues(policy.Namespace, policy.Name, "sent").Inc()
	r.mark(policy, observation.ResizeMark{Time: now, Pod: p.Name, Generation: applied.Generation, Result: string(v1alpha1.ResizeResultInProgress), Change: ps.Change,
		Capped: len(a.Decision.Short) > 0, Restarts: restarts(a.Plan)})
	r.Events.Eventf(p, policy, corev1.EventTypeNormal, EventResized, "Resize", "%s", ps.Change)
	log.FromContext(ctx).Info("resize sent", "pod", klog.KObj(p), "changes", ps.Change, "generation", applied.Generation)
	return 0, nil
}

// observeResize reports, once, how tailor's last resize of p ended.
func (r *Reconciler) observeResize(policy *v1alpha1.TailorPolicy, state *store.PolicyState, p *corev1.Pod, now time.Time) {
	ps := state.Pod(p)
	if ps.ResizeGeneration == 0 {
		return
	}
	obs := gather.Observe(p)
	if obs.Generation < ps.ResizeGeneration {
		return
	}
	ps.Result, ps.Message = string(obs.State), ps.Change
	if obs.State != actuator.StateDone && obs.Message != "" {
		ps.Message = ps.Change + ": " + obs.Message
	}
	if ps.Outcome == string(obs.State) {
		return
	}
	ps.Outcome = string(obs.State)
	r.mark(policy, observation.ResizeMark{Time: ps.LastResize, Pod: p.Name, Generation: ps.ResizeGeneration, Result: string(resultOf(ps.Result)), Change: ps.Message})
	if obs.State == actuator.StateDone && !ps.SentRaiseSince.IsZero() {
		policymetrics.ReactionSeconds.WithLabelValues(policy.Namespace, policy.Name).Observe(now.Sub(ps.SentRaiseSince).Seconds())
		ps.SentRaiseSince = time.Time{}
	}
	switch obs.State {
	case actuator.StateDeferred:
		r.Events.Eventf(p, policy, corev1.EventTypeWarning, EventResizeDeferred, "Resize", "kubelet deferred the resize: %s", obs.Message)
	case actuator.StateInfeasible, actuator.StateError:
		r.Events.Eventf(p, policy, corev1.EventTypeWarning, EventResizeFailed, "Resize", "%s: %s", obs.State, obs.Message)
	}
}

// reportMemoryAtRisk warns, before the OOM killer acts, of every container
// whose source saw its working set on course for its memory limit (the node
// agent) and that this sync does not raise: bounds, the node's room, the
// resize policy, a resize too recent or one in flight. A raise on its way
// says nothing; the event names what holds the limit.
func (r *Reconciler) reportMemoryAtRisk(policy *v1alpha1.TailorPolicy, in *syncInput, d autoscale.PolicyDecision, held map[string]autoscale.Held) {
	for _, p := range in.pods {
		dec := d.Decisions[p.Name]
		for _, c := range podcontainers.Names(p) {
			u, ok := in.usage.Usage[metrics.Key{Namespace: p.Namespace, Pod: p.Name, Container: c}]
			if !ok || !u.MemoryAtRisk || raisesMemory(dec, c) {
				continue
			}
			if h, ok := held[p.Name]; ok && h.Reason == autoscale.HoldInFlight {
				// Its resize is being applied; that may be the raise.
				continue
			}
			why := memoryHeldBy(dec, held[p.Name], c)
			if pol, err := policy.Spec.PolicyFor(c); err == nil {
				if most, ok := pol.MaxAllowed[corev1.ResourceMemory]; ok && float64(most.Value()) <= advise.Requested(p, c, corev1.ResourceMemory) {
					why = fmt.Sprintf("it already has its policy's maxAllowed memory, %s", most.String())
				}
			}
			msg := fmt.Sprintf("container %s: working set %s of its %s memory limit", c, bytesText(u.Memory), bytesText(advise.Limited(p, c, corev1.ResourceMemory)))
			if u.MemoryGrowth != nil && *u.MemoryGrowth > 0 {
				msg += fmt.Sprintf(", growing %s/s", bytesText(*u.MemoryGrowth))
			}
			if u.MemoryPressure != nil && *u.MemoryPressure > 0 {
				msg += fmt.Sprintf(", stalled on memory %.0f%% of the time", *u.MemoryPressure*100)
			}
			msg += "; the OOM killer may act, and tailor does not raise it: " + why
			r.reportOnce(in.state.Pod(p), p, policy, "memrisk:"+c, EventMemoryAtRisk, msg)
		}
	}
}

// raisesMemory says whether dec raises container c's memory limit, or its
// request when it has no limit.
func raisesMemory(dec podchange.Decision, c string) bool {
	for _, ch := range dec.Changes {
		if ch.Container != c || ch.Resource != corev1.ResourceMemory {
			continue
		}
		if ch.LimitNow != nil && ch.LimitBefore != nil {
			return ch.LimitNow.Cmp(*ch.LimitBefore) > 0
		}
		return ch.RequestNow.Cmp(ch.RequestBefore) > 0
	}
	return false
}

// memoryHeldBy says what keeps container c's memory where it is.
func memoryHeldBy(dec podchange.Decision, h autoscale.Held, c string) string {
	for _, s := range dec.Skips {
		if s.Container == c && (s.Resource == corev1.ResourceMemory || s.Resource == "") {
			return s.Message
		}
	}
	for _, sh := range dec.Short {
		if sh.Container == c && sh.Resource == corev1.ResourceMemory {
			return fmt.Sprintf("the node has room for %s of the %s wanted", sh.Got.String(), sh.Wanted.String())
		}
	}
	if h.Message != "" {
		return h.Message
	}
	if dec.RetryAfter > 0 {
		return fmt.Sprintf("the pod was resized too recently (behavior.minResizeInterval); the next resize may come in %s", dec.RetryAfter.Round(time.Second))
	}
	return "the recommendation is not above what it has (its policy's maxAllowed, or the policy does not control memory)"
}

func bytesText(b float64) string { return fmt.Sprintf("%.0fMi", b/(1<<20)) }

// shortText says which raises the node's room cut, for events and status.
func shortText(short []podchange.Shortfall) string {
	parts := make([]string, 0, len(short))
	for _, s := range short {
		parts = append(parts, fmt.Sprintf("container %s %s request raised to %s of the %s recommended: the node had %s free",
			s.Container, s.Resource, s.Got.String(), s.Wanted.String(), s.Room.String()))
	}
	return strings.Join(parts, "; ")
}

func describe(d podchange.Decision) string {
	var parts []string
	for _, c := range d.All() {
		name := c.Container
		if name == podcontainers.PodLevelName {
			name = "pod"
		}
		s := fmt.Sprintf("%s %s request %s -> %s", name, c.Resource, c.RequestBefore.String(), c.RequestNow.String())
		limit := c.LimitBefore != nil && c.LimitNow != nil
		switch {
		case limit && c.RequestNow.Cmp(c.RequestBefore) == 0:
			// A limit raised alone (the tail of memory outgrew it).
			s = fmt.Sprintf("%s %s limit %s -> %s, request %s kept", name, c.Resource, c.LimitBefore.String(), c.LimitNow.String(), c.RequestNow.String())
		case limit:
			s += fmt.Sprintf(", limit %s -> %s", c.LimitBefore.String(), c.LimitNow.String())
		}
		if len(c.Notes) > 0 {
			// Which rule shaped the value: a bound, a step, the working
			// set, the limit that caps a request.
			s += " (" + strings.Join(c.Notes, "; ") + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// reportMetrics says, once when it starts and once when it ends, that the
// metrics source is down, and once when it starts that some containers have
// no usable figures (missing, stale, malformed, or none a container can
// have): the Ready condition says so on every sync, an event marks when.
func (r *Reconciler) reportMetrics(policy *v1alpha1.TailorPolicy, state *store.PolicyState, wasDown, wasRejecting bool) {
	up := 1.0
	if state.MetricsErr != nil {
		up = 0
	}
	policymetrics.MetricsSourceUp.WithLabelValues(policy.Namespace, policy.Name).Set(up)
	switch down := state.MetricsErr != nil; {
	case down && !wasDown:
		r.Events.Eventf(policy, nil, corev1.EventTypeWarning, EventMetricsUnavailable, "Read",
			"metrics source %s: %v; nothing is lowered until usage is back, OOM kills are still answered", r.Source.Name(), state.MetricsErr)
	case !down && wasDown:
		r.Events.Eventf(policy, nil, corev1.EventTypeNormal, EventMetricsRestored, "Read", "metrics source %s answers again", r.Source.Name())
	}
	held := gather.HeldFor(state.Problems)
	state.Rejecting = held != ""
	if state.Rejecting && !wasRejecting {
		r.Events.Eventf(policy, nil, corev1.EventTypeWarning, EventMetricsIncomplete, "Read",
			"metrics source %s: %s; those containers are held (never lowered, raised only on OOM kills) until their figures are back", r.Source.Name(), held)
	}
}

// reportOwners says once, when it starts, that another policy or a
// VerticalPodAutoscaler sizes some of the policy's pods: the Ready
// condition says so on every sync.
func (r *Reconciler) reportOwners(policy *v1alpha1.TailorPolicy, state *store.PolicyState, o owned) {
	var keys []string
	if o.vpa.Name != "" {
		keys = append(keys, "vpa:"+o.vpa.String())
	}
	for n := range o.lost {
		keys = append(keys, "policy:"+n)
	}
	if o.target != "" {
		keys = append(keys, "target:"+o.target)
	}
	sort.Strings(keys)
	key := strings.Join(keys, ",")
	was := state.OthersReported
	state.OthersReported = key
	if key == "" || key == was {
		return
	}
	if o.vpa.Name != "" {
		r.Events.Eventf(policy, nil, corev1.EventTypeWarning, EventVerticalPodAutoscaler, "Hold", "%s", o.vpaHeld())
	}
	if c := o.conflict(); c != "" {
		r.Events.Eventf(policy, nil, corev1.EventTypeWarning, EventConflict, "Hold", "%s", c)
	}
}

package act

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/canary"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/limits"
	"github.com/tailorhq/tailor/internal/controller/policy/gather"
	"github.com/tailorhq/tailor/internal/controller/policy/policymetrics"
	"github.com/tailorhq/tailor/internal/controller/policy/store"
	"github.com/tailorhq/tailor/internal/jvm"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/observation"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/podcontainers"
)

// Actor carries out a policy's decision: it resizes, evicts and deletes
// pods, and says what it did and what it held back in events.
type Actor struct {
	Client   client.Client
	Events   events.EventRecorder
	Actuator *actuator.Actuator
	// Source is the manager's metrics source, which the events about usage
	// name.
	Source metrics.Source
	// SyncPeriod is when a refused resize is tried again.
	SyncPeriod time.Duration
	// Observer, if set, is told of each resize and eviction (the
	// dashboard's history).
	Observer observation.Observer
}

// Input is what the decision was made from that act reports on: the
// policy's memory, its pods, and what gather and advise found standing.
type Input struct {
	State *store.PolicyState
	Pods  []*corev1.Pod
	// WasDown and WasRejecting are what the previous sync knew of the
	// metrics source, for the events act sends when that changes.
	WasDown, WasRejecting bool
	// Owners is who else sizes some of the policy's pods.
	Owners Owners
	// PreemptionRefused says why a raise no room in place could be made
	// for was not sent for the scheduler to preempt for, though the
	// policy asks for it (the manager does not allow it); "" otherwise.
	PreemptionRefused string
	// recorded are the owners whose status.recreations entry this sync
	// made (Result.Recorded).
	recorded []types.UID
}

// Owners is who else sizes some of the policy's pods, for the events that
// say so once when it starts.
type Owners struct {
	// Others names them, "" when none does: a new name is a new state.
	Others string
	// VPAHeld and Conflict say which VerticalPodAutoscaler and which other
	// policies size them, "" when none does.
	VPAHeld, Conflict string
}

// Decision is what act carries out: the sync's decision and what the
// controller concluded from it, so that act does not judge again.
type Decision struct {
	autoscale.SyncDecision
	// Resize: the policy sizes its pods. False (mode Off) replaces the
	// stuck pods that are due and sends nothing else.
	Resize bool
	// Requeue is when the decision wants the policy synced again; act
	// makes it sooner when a write asks to be retried.
	Requeue time.Duration
	// MemoryAtRisk are the containers the decision leaves at risk of an
	// OOM kill, for the events that warn of it.
	MemoryAtRisk []MemoryAtRisk
	// HeapFits are the JVMs whose heap cannot use their memory limit, and
	// the heap option that would (jvm.JudgeFit), for the events that say
	// so.
	HeapFits []HeapFit
}

// HeapFit is what one container's JVM heap makes of its memory limit.
type HeapFit struct {
	Pod       *corev1.Pod
	Container string
	Fit       jvm.Fit
}

// MemoryAtRisk is a container whose working set is on course for its
// memory limit and that the sync does not raise, and why, in a message.
type MemoryAtRisk struct {
	Pod       *corev1.Pod
	Container string
	Message   string
}

// Result is what act did that the rest of the sync needs.
type Result struct {
	// Requeue is when to look again.
	Requeue time.Duration
	// Blocked is what held resizes back, by reason, for status.
	Blocked map[string]string
	// Recorded are the owners whose status.recreations entry this sync
	// made: it is written with the sync's status, and taken back if that
	// write fails.
	Recorded []types.UID
}

// Act carries out a policy's decision (autoscale.DecideSync): it reports
// how earlier resizes ended, replaces the unschedulable pods that are due,
// says once per state what is held back and why, evicts in mode
// InPlaceOrRecreate, and sends the resizes.
func (r *Actor) Act(ctx context.Context, policy *v1alpha1.TailorPolicy, in *Input, d Decision, now time.Time) (Result, error) {
	state := in.State
	r.Announce(policy, in)
	blocked := map[string]string{}
	// Errors one pod meets are collected, not returned at once: the other
	// pods are still served and status still written.
	var errs []error
	requeue := d.Requeue
	sooner := func(after time.Duration) {
		if after > 0 && after < requeue {
			requeue = after
		}
	}
	inFlightNow := 0
	for _, p := range in.Pods {
		r.observeResize(policy, state, p, now)
		if gather.InFlight(p) {
			inFlightNow++
		}
	}
	if d.StuckSeen != nil {
		if err := r.replaceStuck(ctx, policy, in, d.SyncDecision, blocked); err != nil {
			errs = append(errs, err)
		}
	}
	if !d.Resize {
		policymetrics.ResizesInFlight.WithLabelValues(policy.Namespace, policy.Name).Set(float64(inFlightNow))
		return Result{Requeue: requeue, Blocked: blocked, Recorded: in.recorded}, errors.Join(errs...)
	}
	held := map[string]fleet.Held{}
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
	roomAsks := map[string]autoscale.RoomAsk{}
	for _, a := range d.Room.Asks {
		roomAsks[a.Pod.Name] = a
	}
	for _, p := range in.Pods {
		ps := state.Pod(p)
		dec := d.Decisions[p.Name]
		h, isHeld := held[p.Name]
		if a, ok := roomAsks[p.Name]; ok {
			dec, h = withRoom(dec, h, a)
			r.reportRoomAsked(policy, ps, a)
		}
		r.reportSkips(policy, ps, p, dec, blocked)
		if isHeld {
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
			if a, ok := roomAsks[p.Name]; ok && a.Text() != "" {
				msg += "; " + a.Text()
			}
			blocked[string(podchange.SkipNoRoom)] = msg
			key := "capped"
			for _, s := range dec.Short {
				key += ":" + s.Container + "/" + string(s.Resource) + "=" + s.Wanted.String()
			}
			r.reportOnce(ps, p, policy, key, EventResizeCapped, msg)
		}
	}
	for _, m := range d.MemoryAtRisk {
		r.reportOnce(state.Pod(m.Pod), m.Pod, policy, "memrisk:"+m.Container, EventMemoryAtRisk, m.Message)
	}
	for _, h := range d.HeapFits {
		r.reportHeap(policy, state.Pod(h.Pod), h)
	}
	r.reportCanary(policy, d.Canary)
	sent := map[types.UID]bool{}
	for _, a := range d.Sends {
		retry, err := r.send(ctx, policy, state, a.Action, actuator.ApplyOptions{FieldManager: a.FieldManager}, now, blocked)
		if err != nil {
			errs = append(errs, err)
			r.reportFailure(policy, state.Pod(a.Pod), a.Pod, "Resize", err, blocked)
			continue
		}
		if retry == 0 {
			inFlightNow++
			sent[a.Pod.UID] = true
			r.reportPreemption(policy, state.Pod(a.Pod), a.Action, now)
		}
		sooner(retry)
	}
	r.reportRoom(policy, d.Room, sent)
	if in.PreemptionRefused != "" {
		blocked[EventPreemptionNotAllowed] = in.PreemptionRefused
	}
	for _, p := range in.Pods {
		state.Pod(p).SettleReports()
	}
	policymetrics.ResizesInFlight.WithLabelValues(policy.Namespace, policy.Name).Set(float64(inFlightNow))
	return Result{Requeue: requeue, Blocked: blocked, Recorded: in.recorded}, errors.Join(errs...)
}

// Announce sends the events of what gather and advise found standing: a
// checkpoint that could not be read back, the metrics source down, back or
// incomplete, and another policy or a VerticalPodAutoscaler sizing some of
// the policy's pods.
func (r *Actor) Announce(policy *v1alpha1.TailorPolicy, in *Input) {
	if in.State.RestoreUnsaid {
		r.Events.Eventf(policy, nil, corev1.EventTypeWarning, EventCheckpointInvalid, "Restore", "%s", in.State.RestoreProblem)
		in.State.RestoreUnsaid = false
	}
	r.reportOwners(policy, in.State, in.Owners)
	r.reportMetrics(policy, in.State, in.WasDown, in.WasRejecting)
}

// reportFailure says, once per standing state, that a pod's resize or
// eviction failed in a way a retry may fix (an apiserver error, a timeout).
func (r *Actor) reportFailure(policy *v1alpha1.TailorPolicy, ps *store.PodState, p *corev1.Pod, action string, err error, blocked map[string]string) {
	msg := fmt.Sprintf("pod %s: %v", p.Name, err)
	blocked["Failed"+action] = msg
	if r.reportOnce(ps, p, policy, "failed:"+action, EventResizeFailed, msg) {
		policymetrics.ResizesTotal.WithLabelValues(policy.Namespace, policy.Name, "failed").Inc()
	}
}

// reportSkips turns a pod's skipped changes into the ResizesBlocked reasons
// and one event per state.
func (r *Actor) reportSkips(policy *v1alpha1.TailorPolicy, ps *store.PodState, p *corev1.Pod, dec podchange.Decision, blocked map[string]string) {
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
func (r *Actor) reportHeld(policy *v1alpha1.TailorPolicy, ps *store.PodState, p *corev1.Pod, h fleet.Held, blocked map[string]string) {
	switch h.Reason {
	case fleet.HoldInFlight:
		// Its own resize is being applied: nothing to report.
	case fleet.HoldMaxConcurrent, canary.Hold, canary.HoldBackoff, limits.HoldOutsideWindow, limits.HoldBudget, limits.HoldNamespaceBudget:
		// Pacing, the canary, change windows and the budget hold
		// lowerings by design: the conditions say so, no event per pod.
		blocked[string(h.Reason)] = h.Message
	case fleet.HoldNodeUnknown:
		blocked[string(h.Reason)] = "pod " + p.Name + ": " + h.Message
	case fleet.HoldRefused:
		blocked[string(h.Rule)] = h.Message
		if r.reportOnce(ps, p, policy, "refused:"+string(h.Rule), EventResizeRefused, "not sent: "+h.Message) {
			policymetrics.ResizesTotal.WithLabelValues(policy.Namespace, policy.Name, "refused").Inc()
		}
	case fleet.HoldNamespaceRules:
		msg := "not sent: " + h.Message
		blocked[string(h.Reason)] = "pod " + p.Name + ": " + msg
		if r.reportOnce(ps, p, policy, "nsrules", EventResizeRefused, msg) {
			policymetrics.ResizesTotal.WithLabelValues(policy.Namespace, policy.Name, "refused").Inc()
		}
	case fleet.HoldNoRoom:
		msg := "not sent: " + h.Message
		blocked[string(h.Reason)] = msg
		if r.reportOnce(ps, p, policy, "nodefull", EventResizeDeferred, msg) {
			policymetrics.ResizesTotal.WithLabelValues(policy.Namespace, policy.Name, "deferred").Inc()
		}
	}
}

// send applies one resize. It returns 0 when it was sent, else when to try
// again.
func (r *Actor) send(ctx context.Context, policy *v1alpha1.TailorPolicy, state *store.PolicyState, a fleet.Action, opts actuator.ApplyOptions, now time.Time, blocked map[string]string) (time.Duration, error) {
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
func (r *Actor) observeResize(policy *v1alpha1.TailorPolicy, state *store.PolicyState, p *corev1.Pod, now time.Time) {
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
	r.mark(policy, observation.ResizeMark{Time: ps.LastResize, Pod: p.Name, Generation: ps.ResizeGeneration, Result: string(ps.ResizeResult()), Change: ps.Message})
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
func (r *Actor) reportMetrics(policy *v1alpha1.TailorPolicy, state *store.PolicyState, wasDown, wasRejecting bool) {
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
func (r *Actor) reportOwners(policy *v1alpha1.TailorPolicy, state *store.PolicyState, o Owners) {
	was := state.OthersReported
	state.OthersReported = o.Others
	if o.Others == "" || o.Others == was {
		return
	}
	if o.VPAHeld != "" {
		r.Events.Eventf(policy, nil, corev1.EventTypeWarning, EventVerticalPodAutoscaler, "Hold", "%s", o.VPAHeld)
	}
	if o.Conflict != "" {
		r.Events.Eventf(policy, nil, corev1.EventTypeWarning, EventConflict, "Hold", "%s", o.Conflict)
	}
}

func (r *Actor) mark(policy *v1alpha1.TailorPolicy, m observation.ResizeMark) {
	if r.Observer != nil {
		r.Observer.Resized(types.NamespacedName{Namespace: policy.Namespace, Name: policy.Name}, m)
	}
}

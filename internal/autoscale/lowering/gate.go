package lowering

import (
	"time"

	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/podcontainers"
)

// Gate is one of the things that hold a policy's lowerings back from
// fleet.DecidePolicy while letting its raises through (a canary, the change
// windows and lowering budgets), with O the outcome it reports for the
// controller. A sync passes its input through each gate in turn, decides on
// what the last lets through, then settles the gates in the reverse order.
type Gate[O any] interface {
	// Pass returns the input with the lowerings the gate holds this sync
	// taken out (in itself is left as it was), and the step that settles
	// the gate on DecidePolicy's decision about that input.
	Pass(in fleet.PolicyInput) (fleet.PolicyInput, Settle[O], error)
}

// Settle completes DecidePolicy's decision with what a gate did (the
// lowerings it held, anything it sends whatever DecidePolicy says, when it
// wants the next sync) and returns the gate's outcome.
type Settle[O any] func(d *fleet.PolicyDecision) O

// Changes are the changes of d that lower a request or a limit.
func Changes(d podchange.Decision) []podchange.Change {
	var out []podchange.Change
	for _, ch := range d.All() {
		if ch.RequestNow.Cmp(ch.RequestBefore) < 0 || (ch.LimitNow != nil && ch.LimitBefore != nil && ch.LimitNow.Cmp(*ch.LimitBefore) < 0) {
			out = append(out, ch)
		}
	}
	return out
}

// Without is p with the targets of the resources d lowers taken
// out: those are held as they are, and its raises go on.
func Without(p fleet.PodInput, down []podchange.Change) fleet.PodInput {
	targets := make(map[string]podchange.Target, len(p.Targets))
	for n, t := range p.Targets {
		targets[n] = t
	}
	for _, ch := range down {
		if ch.Container == podcontainers.PodLevelName {
			p.PodTarget = p.PodTarget.Without(ch.Resource)
			continue
		}
		t := targets[ch.Container].Without(ch.Resource)
		if t.CPU == nil && t.Memory == nil {
			delete(targets, ch.Container)
		} else {
			targets[ch.Container] = t
		}
	}
	p.Targets = targets
	return p
}

// Stamp is a time in conditions and events: UTC, to the second.
func Stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

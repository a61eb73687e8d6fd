package policy

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/advise"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/controller/policy/act"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/podcontainers"
)

// memoryAtRisk is every container whose source saw its working set on
// course for its memory limit (the node agent) and that this sync does not
// raise: bounds, the node's room, the resize policy, a resize too recent or
// one in flight, for act to warn of before the OOM killer acts. A raise on
// its way is not at risk; the message names what holds the limit.
func memoryAtRisk(policy *v1alpha1.TailorPolicy, in *syncInput, d fleet.PolicyDecision) []act.MemoryAtRisk {
	held := map[string]fleet.Held{}
	for _, h := range d.Held {
		held[h.Pod.Name] = h
	}
	var out []act.MemoryAtRisk
	for _, p := range in.pods {
		dec := d.Decisions[p.Name]
		for _, c := range podcontainers.Names(p) {
			u, ok := in.usage.Usage[metrics.Key{Namespace: p.Namespace, Pod: p.Name, Container: c}]
			if !ok || !u.MemoryAtRisk || raisesMemory(dec, c) {
				continue
			}
			if h, ok := held[p.Name]; ok && h.Reason == fleet.HoldInFlight {
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
			out = append(out, act.MemoryAtRisk{Pod: p, Container: c, Message: msg})
		}
	}
	return out
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
func memoryHeldBy(dec podchange.Decision, h fleet.Held, c string) string {
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

package policy

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/internal/autoscale"
)

// startupBoost applies autoscale.BoostTargets to a pod's advice: the cpu
// targets of the containers the boost decides are its own. It returns the
// containers whose target is a boost given or taken back (which Decide
// applies directly), those of them given (a resize carrying one is sent
// under autoscale.BoostFieldManager), and the containers not boosted, and
// why.
func (r *Reconciler) startupBoost(state *policyState, spec *v1alpha1.TailorPolicySpec, p *corev1.Pod, a *podAdvice, holds autoscale.Holds, now time.Time) (boost, raise map[string]bool, not []string) {
	if spec.StartupBoost == nil {
		return nil, nil, nil
	}
	ps := state.pod(p)
	d := autoscale.BoostTargets(autoscale.BoostInput{
		Pod: p, Spec: spec, Holds: holds, FieldManager: actuator.FieldManager, Now: now,
		Base: func(name string) (resource.Quantity, bool) {
			if q, ok := r.boostBase(state, a, name); ok {
				return q, true
			}
			q, ok := ps.boostFrom[name]
			return q, ok
		},
	})
	boost, raise = map[string]bool{}, map[string]bool{}
	for name, bt := range d.Containers {
		t := a.targets[name]
		t.CPU = bt.CPU
		if bt.CPU != nil {
			boost[name] = true
		}
		if bt.Raise {
			raise[name] = true
			if _, known := r.boostBase(state, a, name); !known {
				// Nothing else says what to go back to: remember what it
				// had. A restart forgets it, and the boost then stays
				// until there is a recommendation.
				if ps.boostFrom == nil {
					ps.boostFrom = map[string]resource.Quantity{}
				}
				if _, had := ps.boostFrom[name]; !had {
					ps.boostFrom[name] = findContainer(p, name).Resources.Requests[corev1.ResourceCPU]
				}
			}
		}
		if t.CPU == nil && t.Memory == nil {
			delete(a.targets, name)
		} else {
			a.targets[name] = t
		}
	}
	for name := range ps.boostFrom {
		if _, decided := d.Containers[name]; !decided {
			delete(ps.boostFrom, name)
		}
	}
	return boost, raise, d.NotBoosted
}

// boostBase is the CPU request a container would have without a boost: the
// workload's recommendation, or its template's request before there is one.
func (r *Reconciler) boostBase(state *policyState, a *podAdvice, name string) (resource.Quantity, bool) {
	if rec, ok := a.recs[name]; ok {
		if needed, seen := rec.CPU.Needed(); seen && needed > 0 {
			return *resource.NewMilliQuantity(int64(needed*1000+0.5), resource.DecimalSI), true
		}
	}
	if state.template != nil {
		tp := &corev1.Pod{Spec: state.template.Spec}
		if c := findContainer(tp, name); c != nil {
			if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
				return q, true
			}
		}
	}
	return resource.Quantity{}, false
}

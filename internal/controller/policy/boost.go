package policy

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/metrics"
)

// startupBoost sets the cpu targets of a pod's boostable containers while
// the policy's startupBoost applies to it, and returns the containers whose
// target is a boost given or taken back (which Decide applies directly):
//
//   - while the pod starts, a container below its boost is raised to it in
//     place (a pod created without it, a restarted container), and one at
//     or above it is held: nothing lowers a starting pod's CPU;
//   - once started, a container still at the CPU it was boosted to (the
//     admission annotation, or the in-place boost) goes straight back to
//     the recommendation, with no stabilization or step limits: the boost
//     was lent, not learnt.
//
// The second result lists the containers that are not boosted, and why.
func (r *Reconciler) startupBoost(state *policyState, spec *v1alpha1.TailorPolicySpec, p *corev1.Pod, a *podAdvice, holds autoscale.Holds, now time.Time) (map[string]bool, []string) {
	b := spec.StartupBoost
	if b == nil {
		return nil, nil
	}
	starting, _ := autoscale.Starting(p, b, now)
	ps := state.pod(p)
	admitted, err := autoscale.ParseBoostText(p.Annotations[v1alpha1.BoostAnnotation])
	if err != nil {
		// A hand-written annotation takes back nothing.
		admitted = nil
	}
	boost := map[string]bool{}
	var not []string
	for _, name := range metrics.Containers(p) {
		c := findContainer(p, name)
		pol, err := spec.PolicyFor(name)
		if c == nil || err != nil {
			continue
		}
		if why := autoscale.Boostable(c, pol); why != "" {
			not = append(not, fmt.Sprintf("container %s is not boosted: %s", name, why))
			continue
		}
		if holds.Holds(name, corev1.ResourceCPU) {
			not = append(not, fmt.Sprintf("container %s is not boosted: a HorizontalPodAutoscaler divides by its cpu request", name))
			continue
		}
		cur := c.Resources.Requests[corev1.ResourceCPU]
		rec, recorded := ps.boosts[name]
		if !recorded {
			rec.to, recorded = admitted[name]
		}
		to := rec.to
		base, known := r.boostBase(state, a, name)
		if !known && !rec.from.IsZero() {
			// No recommendation or template: back to what it had.
			base, known = rec.from, true
		}
		t := a.targets[name]
		switch {
		case starting && recorded && cur.Cmp(to) >= 0:
			t.CPU = nil
		case starting:
			if !known {
				base = cur
			}
			want := autoscale.BoostedCPU(base, b)
			if cur.Cmp(want) < 0 {
				t.CPU = &want
				boost[name] = true
				if ps.boosts == nil {
					ps.boosts = map[string]boostRecord{}
				}
				ps.boosts[name] = boostRecord{to: want, from: cur}
			} else {
				t.CPU = nil
			}
		case recorded && cur.Cmp(to) == 0 && known && cur.Cmp(base) > 0:
			t.CPU = &base
			boost[name] = true
		default:
			delete(ps.boosts, name)
		}
		if t.CPU == nil && t.Memory == nil {
			delete(a.targets, name)
		} else {
			a.targets[name] = t
		}
	}
	sort.Strings(not)
	return boost, not
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

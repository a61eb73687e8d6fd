package policy

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/advise"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/controller/policy/act"
	"github.com/tailorhq/tailor/internal/jvm"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/podcontainers"
)

// heapFits judges the JVM of each container of the policy's pods
// (jvm.JudgeFit) at the memory limit this sync leaves it with: the one the
// decision sizes, else its own; against what the recommendation asks and
// what the container holds now; a limit tailor is lowering is judged
// where it heads (jvm.FitInput.Lowers). JVMs is whether any container runs one
// (by its spec or the node agent's measurement), for a status that says
// nothing of JVMs to a policy that has none. A heap sized from the limit
// is judged from the spec only in a pod whose limit is still the one its
// JVM started under: never resized (metadata.generation 1, and no resize
// tailor knows of).
func heapFits(policy *v1alpha1.TailorPolicy, in *syncInput, d fleet.PolicyDecision) (fits []act.HeapFit, jvms bool) {
	for _, p := range in.pods {
		a := in.advice[p.UID]
		dec := d.Decisions[p.Name]
		for _, name := range podcontainers.Names(p) {
			c := podcontainers.Named(p, name)
			h := jvm.HeapOf(c)
			var measured *jvm.Measured
			if m, ok := a.JVM[name]; ok {
				measured = &m
			}
			if !h.JVM && measured == nil {
				continue
			}
			jvms = true
			limit, ok := c.Resources.Limits[corev1.ResourceMemory]
			if !ok {
				continue
			}
			fit := jvm.FitInput{Heap: h, Measured: measured, Limit: limit}
			for _, ch := range dec.Changes {
				if ch.Container == name && ch.Resource == corev1.ResourceMemory && ch.LimitNow != nil {
					fit.Limit = *ch.LimitNow
				}
			}
			fit.Lowers = lowersLimit(policy, name)
			if p.Generation <= 1 && in.state.Pod(p).LastResize.IsZero() {
				fit.StartLimit = limit
			}
			if ws, ok := a.WorkingSet[name]; ok {
				fit.WorkingSet = &ws
			}
			if rec, ok := a.Recs[name]; ok {
				// The limit the usage seen needs (not the target, which
				// holds the current value while a lowering waits out its
				// stabilization): the request's at the ratio the pod's
				// limit has to its request, or the limit advised apart
				// where higher, as RequestsAndLimits sizes it from the
				// template's ratio (which a pod tailor has not resized
				// has).
				need, _ := rec.Memory.Needed()
				if req := advise.Requested(p, name, corev1.ResourceMemory); req > 0 {
					need *= max(1, float64(limit.Value())/req)
				}
				if apart, ok := rec.MemoryLimit.Needed(); ok {
					need = max(need, apart)
				}
				// Whole MiB up, as status.recommendation says it: the
				// advice moves when the recommendation does, not with
				// every sample.
				const mi = 1 << 20
				fit.Needed = *resource.NewQuantity(int64(math.Ceil(need/mi))*mi, resource.BinarySI)
			}
			if f := jvm.JudgeFit(fit); f.Reason != "" {
				fits = append(fits, act.HeapFit{Pod: p, Container: name, Fit: f})
			}
		}
	}
	return fits, jvms
}

// lowersLimit says whether the policy lowers container name's memory
// limit in place: a mode that resizes, the container's policy not Off,
// memory controlled, limits with it (RequestsAndLimits).
func lowersLimit(policy *v1alpha1.TailorPolicy, name string) bool {
	if policy.Spec.Mode() == v1alpha1.UpdateModeOff {
		return false
	}
	pol, err := policy.Spec.PolicyFor(name)
	if err != nil || (pol.Mode != nil && *pol.Mode == v1alpha1.ContainerModeOff) || !podchange.Controls(pol, corev1.ResourceMemory) {
		return false
	}
	return pol.ControlledValues == nil || *pol.ControlledValues == v1alpha1.ControlledValuesRequestsAndLimits
}

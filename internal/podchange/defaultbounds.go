package podchange

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/podcontainers"
)

// DefaultBound is the maxAllowed of one resource that a container gets when
// its policy sets none, and where it comes from.
type DefaultBound struct {
	Quantity resource.Quantity
	// From says where, for people: "LimitRange/team max" or "the largest
	// node's allocatable (node-7)".
	From string
}

// LargestAllocatable is, for cpu and memory, the most any one of nodes can
// give a pod: the largest allocatable, with the node that has it (the
// first by name among equals).
func LargestAllocatable(nodes []*corev1.Node) map[corev1.ResourceName]DefaultBound {
	out := map[corev1.ResourceName]DefaultBound{}
	sorted := append([]*corev1.Node(nil), nodes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, n := range sorted {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			q, ok := n.Status.Allocatable[r]
			if !ok || q.Sign() <= 0 {
				continue
			}
			if cur, seen := out[r]; !seen || q.Cmp(cur.Quantity) > 0 {
				out[r] = DefaultBound{Quantity: q.DeepCopy(), From: fmt.Sprintf("the largest node's allocatable (%s)", n.Name)}
			}
		}
	}
	return out
}

// DefaultMaxAllowed is the maxAllowed, per resource, that a container whose
// policy sets none gets: the tightest max the namespace's LimitRanges give
// a container, which no container may pass anyway, else the largest
// node's allocatable (largest), which no container can use more of; none
// when neither is known. Without it an unbounded policy follows whatever a
// node reports, up to any size, and sizes new pods that no node can take.
func DefaultMaxAllowed(rules *nsrules.Rules, largest map[corev1.ResourceName]DefaultBound) map[corev1.ResourceName]DefaultBound {
	out := map[corev1.ResourceName]DefaultBound{}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if rules != nil {
			if b := rules.ContainerBounds(r); b.Max != nil {
				out[r] = DefaultBound{Quantity: b.Max.Quantity.DeepCopy(), From: fmt.Sprintf("LimitRange/%s max", b.Max.LimitRange)}
				continue
			}
		}
		if b, ok := largest[r]; ok {
			out[r] = b
		}
	}
	return out
}

// BoundedSpec is spec with defaults filled in wherever its container
// policies leave maxAllowed unset, and the defaults it used, by resource
// (those no container needed left out). The default goes on the "*" policy
// (made when there is none), so every container without a maxAllowed of
// its own takes it; a policy whose minAllowed is above the default is
// bounded at its minAllowed, which it asked for. spec is not changed; one
// that leaves nothing unset comes back as it is, so BoundedSpec of its own
// result changes nothing.
//
// This is where a sync's bounds are resolved: DecideSync applies it to
// what it decides (in-place resizes, the admission entry, recreations),
// and the controller to the recommendation status shows.
func BoundedSpec(spec *v1alpha1.TailorPolicySpec, defaults map[corev1.ResourceName]DefaultBound) (*v1alpha1.TailorPolicySpec, map[corev1.ResourceName]DefaultBound) {
	if spec == nil || len(defaults) == 0 {
		return spec, nil
	}
	var policies []v1alpha1.ContainerPolicy
	if spec.ResourcePolicy != nil {
		policies = spec.ResourcePolicy.ContainerPolicies
	}
	star := -1
	for i, p := range policies {
		if p.ContainerName == v1alpha1.DefaultContainerName {
			star = i
		}
	}
	used := map[corev1.ResourceName]DefaultBound{}
	for r, d := range defaults {
		if star >= 0 {
			if _, set := policies[star].MaxAllowed[r]; set {
				continue
			}
		}
		used[r] = d
	}
	if len(used) == 0 {
		return spec, nil
	}
	out := make([]v1alpha1.ContainerPolicy, len(policies))
	for i := range policies {
		out[i] = *policies[i].DeepCopy()
	}
	if star < 0 {
		out = append(out, v1alpha1.ContainerPolicy{ContainerName: v1alpha1.DefaultContainerName})
		star = len(out) - 1
	}
	sp := &out[star]
	if sp.MaxAllowed == nil {
		sp.MaxAllowed = corev1.ResourceList{}
	}
	for r, d := range used {
		sp.MaxAllowed[r] = atLeast(d.Quantity, sp.MinAllowed, r)
		for i := range out {
			p := &out[i]
			if i == star {
				continue
			}
			if _, set := p.MaxAllowed[r]; set {
				continue
			}
			if lo, ok := p.MinAllowed[r]; ok && lo.Cmp(sp.MaxAllowed[r]) > 0 {
				if p.MaxAllowed == nil {
					p.MaxAllowed = corev1.ResourceList{}
				}
				p.MaxAllowed[r] = lo.DeepCopy()
			}
		}
	}
	bounded := spec.DeepCopy()
	if bounded.ResourcePolicy == nil {
		bounded.ResourcePolicy = &v1alpha1.ResourcePolicy{}
	}
	bounded.ResourcePolicy.ContainerPolicies = out
	return bounded, used
}

// atLeast is q, or floor's r when that is more.
func atLeast(q resource.Quantity, floor corev1.ResourceList, r corev1.ResourceName) resource.Quantity {
	if lo, ok := floor[r]; ok && lo.Cmp(q) > 0 {
		return lo.DeepCopy()
	}
	return q.DeepCopy()
}

// DefaultCapped says which of recs' targets a default bound holds below
// what the recommender advises, for status: "memory of app capped at the
// default maxAllowed 8Gi (LimitRange/team max; the policy sets none)";
// empty when none. spec is the policy's own (not BoundedSpec's), so only
// the containers it leaves unbounded are named.
func DefaultCapped(spec *v1alpha1.TailorPolicySpec, defaults map[corev1.ResourceName]DefaultBound, recs []v1alpha1.RecommendedContainerResources) string {
	var out []string
	for _, rc := range recs {
		pol, err := spec.PolicyFor(rc.ContainerName)
		if err != nil || rc.ContainerName == podcontainers.PodLevelName {
			continue
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			d, ok := defaults[r]
			if _, own := pol.MaxAllowed[r]; own || !ok {
				continue
			}
			if want, ok := rc.UncappedTarget[r]; ok && want.Cmp(d.Quantity) > 0 {
				out = append(out, fmt.Sprintf("%s of %s capped at the default maxAllowed %s (%s; the policy sets none), %s advised",
					r, rc.ContainerName, d.Quantity.String(), d.From, want.String()))
			}
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

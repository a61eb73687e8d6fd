package v1alpha1

import (
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultContainerName is the containerName of the entry that applies to
// every container.
const DefaultContainerName = "*"

// Defaults of a container policy field that neither the container's entry
// nor the "*" entry sets. They are not apiserver defaults because a named
// entry must be able to inherit an unset field from "*".
var (
	DefaultContainerMode       = ContainerModeAuto
	DefaultControlledResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
	DefaultControlledValues    = ControlledValuesRequestsAndLimits
	DefaultAllowRestart        = false
)

// Mode is the policy's update mode, InPlace when unset: the one place the
// default is applied, since the CRD leaves updatePolicy optional.
func (s *TailorPolicySpec) Mode() UpdateMode {
	if s.UpdatePolicy != nil && s.UpdatePolicy.UpdateMode != "" {
		return s.UpdatePolicy.UpdateMode
	}
	return UpdateModeInPlace
}

// Preempts reports whether the policy lets a raise be deferred for the
// scheduler to preempt pods of lower priority (behavior.scaleUp.preemption).
func (s *TailorPolicySpec) Preempts() bool {
	b := s.Behavior
	return b != nil && b.ScaleUp != nil && b.ScaleUp.Preemption == ResizePreemptionLowerPriority
}

// PolicyFor returns the policy for the named container with every field
// set: each field comes from the container's own entry, else from the "*"
// entry, else from the defaults above; minAllowed and maxAllowed merge per
// resource, and recommender overrides per field (an unset override stays
// nil: the recommender's default). The result shares nothing with s.
//
// It returns an error when the merged bounds contradict each other (a
// minAllowed above the maxAllowed for the same resource), which the
// apiserver cannot see when the two come from different entries; the
// controller reports it as the Ready condition with ReasonInvalidPolicy.
func (s *TailorPolicySpec) PolicyFor(containerName string) (ContainerPolicy, error) {
	var named, star *ContainerPolicy
	if s.ResourcePolicy != nil {
		for i := range s.ResourcePolicy.ContainerPolicies {
			p := &s.ResourcePolicy.ContainerPolicies[i]
			switch p.ContainerName {
			case containerName:
				named = p
			case DefaultContainerName:
				star = p
			}
		}
	}
	if named == nil {
		named = &ContainerPolicy{}
	}
	if star == nil {
		star = &ContainerPolicy{}
	}

	out := ContainerPolicy{
		ContainerName:       containerName,
		Mode:                ptrTo(first(named.Mode, star.Mode, &DefaultContainerMode)),
		ControlledValues:    ptrTo(first(named.ControlledValues, star.ControlledValues, &DefaultControlledValues)),
		AllowRestart:        ptrTo(first(named.AllowRestart, star.AllowRestart, &DefaultAllowRestart)),
		ControlledResources: DefaultControlledResources,
	}
	switch {
	case named.ControlledResources != nil:
		out.ControlledResources = named.ControlledResources
	case star.ControlledResources != nil:
		out.ControlledResources = star.ControlledResources
	}
	out.ControlledResources = append([]corev1.ResourceName(nil), out.ControlledResources...)

	var minFrom, maxFrom map[corev1.ResourceName]string
	out.MinAllowed, minFrom = mergeResources(named.MinAllowed, star.MinAllowed, named.ContainerName)
	out.MaxAllowed, maxFrom = mergeResources(named.MaxAllowed, star.MaxAllowed, named.ContainerName)
	if named.Recommender != nil || star.Recommender != nil {
		out.Recommender = mergeRecommender(named.Recommender, star.Recommender)
	}

	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		lo, okLo := out.MinAllowed[r]
		hi, okHi := out.MaxAllowed[r]
		if okLo && okHi && lo.Cmp(hi) > 0 {
			return ContainerPolicy{}, fmt.Errorf("container %q: minAllowed.%s %s (from containerName %q) exceeds maxAllowed.%s %s (from containerName %q); lower the one or raise the other",
				containerName, r, lo.String(), minFrom[r], r, hi.String(), maxFrom[r])
		}
	}
	return out, nil
}

// mergeResources takes each resource from named, else from star, and says
// which entry each came from so that an error can point at it.
func mergeResources(named, star corev1.ResourceList, namedName string) (corev1.ResourceList, map[corev1.ResourceName]string) {
	if named == nil && star == nil {
		return nil, nil
	}
	out := corev1.ResourceList{}
	from := map[corev1.ResourceName]string{}
	for r, q := range star {
		out[r], from[r] = q.DeepCopy(), DefaultContainerName
	}
	for r, q := range named {
		out[r], from[r] = q.DeepCopy(), namedName
	}
	return out, from
}

func mergeRecommender(named, star *RecommenderOverrides) *RecommenderOverrides {
	if named == nil {
		named = &RecommenderOverrides{}
	}
	if star == nil {
		star = &RecommenderOverrides{}
	}
	out := RecommenderOverrides{
		CPUWindow:             first(named.CPUWindow, star.CPUWindow),
		MemoryWindow:          first(named.MemoryWindow, star.MemoryWindow),
		JitterHalfLife:        first(named.JitterHalfLife, star.JitterHalfLife),
		CPUHeadroomPercent:    first(named.CPUHeadroomPercent, star.CPUHeadroomPercent),
		MemoryHeadroomPercent: first(named.MemoryHeadroomPercent, star.MemoryHeadroomPercent),
	}
	return out.DeepCopy()
}

// first returns the first non-nil pointer, or nil.
func first[T any](ps ...*T) *T {
	for _, p := range ps {
		if p != nil {
			return p
		}
	}
	return nil
}

// ptrTo copies *p into a new pointer, so the result shares nothing with the
// spec. p is never nil here: the last candidate is always a default.
func ptrTo[T any](p *T) *T {
	v := *p
	return &v
}

// Validate reports what the apiserver's validation cannot see, all at once:
// minAllowed above maxAllowed once a named entry inherits from "*", and a
// selector whose label keys or values are malformed. nil means the spec can
// be acted upon. The controller reports an error as the Ready condition with
// ReasonInvalidPolicy and an event, and leaves the pods alone.
func (s *TailorPolicySpec) Validate() error {
	var errs []error
	if s.Selector != nil {
		if _, err := metav1.LabelSelectorAsSelector(s.Selector); err != nil {
			errs = append(errs, fmt.Errorf("selector: %w", err))
		}
	}
	if s.ResourcePolicy != nil {
		for _, p := range s.ResourcePolicy.ContainerPolicies {
			if p.ContainerName == DefaultContainerName {
				continue
			}
			if _, err := s.PolicyFor(p.ContainerName); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if b := s.Behavior; b != nil && b.ScaleDown != nil && b.ScaleDown.Canary != nil && b.ScaleDown.Canary.Guardrails != nil {
		queries := b.ScaleDown.Canary.Guardrails.Queries
		// A spec stored before the CRD held it to these bounds.
		if len(queries) > MaxCanaryQueries {
			errs = append(errs, fmt.Errorf("canary guardrail queries: %d, at most %d are asked; take some out, or aggregate them into one", len(queries), MaxCanaryQueries))
		}
		for _, q := range queries {
			if len(q.Query) > MaxQueryLength {
				errs = append(errs, fmt.Errorf("canary guardrail query %s: %d bytes, at most %d; shorten it", q.Name, len(q.Query), MaxQueryLength))
			}
			// The CRD's pattern takes what ParseFloat takes; a spec
			// that did not pass through the apiserver may not.
			if q.Threshold != nil {
				if _, err := strconv.ParseFloat(*q.Threshold, 64); err != nil {
					errs = append(errs, fmt.Errorf("canary guardrail query %s: threshold %q is not a number; write one such as 0.5 or 1e-3", q.Name, *q.Threshold))
				}
			}
			if (q.Threshold == nil) == (q.SiblingsPercent == nil) {
				errs = append(errs, fmt.Errorf("canary guardrail query %s: give exactly one of threshold and siblingsPercent", q.Name))
			}
		}
	}
	if s.Metrics != nil && s.Metrics.Prometheus != nil {
		p := s.Metrics.Prometheus
		for _, q := range []struct{ name, text string }{{"cpu", p.CPU}, {"memory", p.Memory}, {"throttled", p.Throttled}, {"timestamp", p.Timestamp}} {
			if len(q.text) > MaxQueryLength {
				errs = append(errs, fmt.Errorf("metrics.prometheus.%s: %d bytes, at most %d; shorten it", q.name, len(q.text), MaxQueryLength))
			}
		}
	}
	return errors.Join(errs...)
}

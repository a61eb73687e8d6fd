// Package policyspec builds the TailorPolicy specs the decision's tests
// draw: a selector policy for app=web, shaped by mutations. It lives apart
// from package builder because the API package's own tests import builder,
// and a builder of the API's types would make that a cycle.
package policyspec

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tailorhq/tailor/api/v1alpha1"
)

// New is a selector policy's spec for app=web with each mutation applied
// in turn.
func New(mutate ...func(*v1alpha1.TailorPolicySpec)) *v1alpha1.TailorPolicySpec {
	s := &v1alpha1.TailorPolicySpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
	for _, m := range mutate {
		m(s)
	}
	return s
}

// ContainerPolicy adds p to a spec's container policies, after those it has.
func ContainerPolicy(p v1alpha1.ContainerPolicy) func(*v1alpha1.TailorPolicySpec) {
	return func(s *v1alpha1.TailorPolicySpec) {
		if s.ResourcePolicy == nil {
			s.ResourcePolicy = &v1alpha1.ResourcePolicy{}
		}
		s.ResourcePolicy.ContainerPolicies = append(s.ResourcePolicy.ContainerPolicies, p)
	}
}

// RequestsOnly has every container's requests sized and its limits left
// as they are.
func RequestsOnly() func(*v1alpha1.TailorPolicySpec) {
	return ContainerPolicy(v1alpha1.ContainerPolicy{ContainerName: "*", ControlledValues: ptr.To(v1alpha1.ControlledValuesRequestsOnly)})
}

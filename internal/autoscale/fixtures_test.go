package autoscale

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func q(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

func spec(mutate ...func(*v1alpha1.TailorPolicySpec)) *v1alpha1.TailorPolicySpec {
	s := &v1alpha1.TailorPolicySpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func containerPolicy(p v1alpha1.ContainerPolicy) func(*v1alpha1.TailorPolicySpec) {
	return func(s *v1alpha1.TailorPolicySpec) {
		if s.ResourcePolicy == nil {
			s.ResourcePolicy = &v1alpha1.ResourcePolicy{}
		}
		s.ResourcePolicy.ContainerPolicies = append(s.ResourcePolicy.ContainerPolicies, p)
	}
}

func ptr[T any](v T) *T { return &v }

func burstable() *builder.ContainerWrapper {
	return builder.Container("app").Requests("250m", "128Mi").Limits("500m", "256Mi")
}

func requestsOnly() func(*v1alpha1.TailorPolicySpec) {
	return containerPolicy(v1alpha1.ContainerPolicy{ContainerName: "*", ControlledValues: ptr(v1alpha1.ControlledValuesRequestsOnly)})
}

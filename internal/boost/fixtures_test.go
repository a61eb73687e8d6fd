package boost

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
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

func ptr[T any](v T) *T { return &v }

package advise

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/internal/amount"
	"github.com/tailorhq/tailor/internal/podcontainers"
)

// Requested is the container's request in cores or bytes (0 when unset):
// the value the recommendation sizes, so the one the recommender compares
// its target with.
func Requested(p *corev1.Pod, container string, r corev1.ResourceName) float64 {
	c := podcontainers.Named(p, container)
	if c == nil {
		return 0
	}
	return amount.In(c.Resources.Requests, r)
}

// Limited is the container's limit in cores or bytes (0 when unset): the
// value CFS throttling and memory risk are measured against.
func Limited(p *corev1.Pod, container string, r corev1.ResourceName) float64 {
	c := podcontainers.Named(p, container)
	if c == nil {
		return 0
	}
	return amount.In(c.Resources.Limits, r)
}

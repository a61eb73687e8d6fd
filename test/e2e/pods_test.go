//go:build e2e

package e2e

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/cluster"
)

// app is a load generator container, reachable on port 8080 by pod IP.
func app() *builder.ContainerWrapper { return cluster.Loadgen() }

// loadgenPod is a pod that is quick to delete and carries no token.
func loadgenPod(ns, name string, containers ...*builder.ContainerWrapper) *corev1.Pod {
	return cluster.LoadgenPod(ns, name, containers...)
}

func podCPURequestMillis(p *corev1.Pod) int64 {
	req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{UseStatusResources: true})
	return req.Cpu().MilliValue()
}

func asAPIStatus(err error, out *apierrors.APIStatus) bool {
	return errors.As(err, out)
}

func hasCause(s metav1.Status, cause metav1.CauseType) bool {
	if s.Details == nil {
		return false
	}
	for _, c := range s.Details.Causes {
		if c.Type == cause {
			return true
		}
	}
	return false
}

//go:build e2e

package e2e

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

type containerSpec struct{ c corev1.Container }

func container(name string) *containerSpec {
	return &containerSpec{c: corev1.Container{
		Name:  name,
		Image: loadgenImage,
		// Exec'ing into the pod is not needed: tests reach loadgen by pod IP.
		Args:            []string{"--listen=:8080"},
		ImagePullPolicy: corev1.PullNever,
		Resources:       corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}},
	}}
}

func setQuantities(l corev1.ResourceList, cpu, mem string) {
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
}

func (s *containerSpec) requests(cpu, mem string) *containerSpec {
	setQuantities(s.c.Resources.Requests, cpu, mem)
	return s
}

func (s *containerSpec) limits(cpu, mem string) *containerSpec {
	setQuantities(s.c.Resources.Limits, cpu, mem)
	return s
}

func (s *containerSpec) policy(cpu, mem corev1.ResourceResizeRestartPolicy) *containerSpec {
	s.c.ResizePolicy = []corev1.ContainerResizePolicy{
		{ResourceName: corev1.ResourceCPU, RestartPolicy: cpu},
		{ResourceName: corev1.ResourceMemory, RestartPolicy: mem},
	}
	return s
}

func loadgenPod(ns, name string, containers ...*containerSpec) *corev1.Pod {
	zero := int64(0)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &zero,
			AutomountServiceAccountToken:  new(bool),
		},
	}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, c.c)
	}
	return p
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

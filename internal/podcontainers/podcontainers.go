package podcontainers

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
)

// PodLevelName names the pod-level spec.resources where a container name is
// expected (status, events, recommender state, checkpoints). No container can
// have it: a container name is a DNS label, which has no underscore.
const PodLevelName = v1alpha1.PodLevelContainerName

// IsSidecar reports whether c, an init container, keeps running beside the
// workload (restartPolicy Always) rather than finishing before it starts.
func IsSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// Running are the containers of spec that run, and hold their requests, for
// the pod's whole life: its sidecars, then its containers.
func Running(spec *corev1.PodSpec) []*corev1.Container {
	var out []*corev1.Container
	for i := range spec.InitContainers {
		if c := &spec.InitContainers[i]; IsSidecar(c) {
			out = append(out, c)
		}
	}
	for i := range spec.Containers {
		out = append(out, &spec.Containers[i])
	}
	return out
}

// Names are the names of the containers Running lists, in its order: the
// containers that have usage to measure and requests to size.
func Names(p *corev1.Pod) []string {
	var out []string
	for _, c := range Running(&p.Spec) {
		out = append(out, c.Name)
	}
	return out
}

// Named returns the regular container or sidecar of p called name: one of
// the containers Running lists; nil for any other name. Finished init
// containers are not autoscaled.
func Named(p *corev1.Pod, name string) *corev1.Container {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == name {
			return &p.Spec.Containers[i]
		}
	}
	for i := range p.Spec.InitContainers {
		if c := &p.Spec.InitContainers[i]; c.Name == name && IsSidecar(c) {
			return c
		}
	}
	return nil
}

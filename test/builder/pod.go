package builder

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// DefaultImage is the image containers get unless Image is called: a pause
// image is tiny and never exits, which is what resize tests need.
const DefaultImage = "registry.k8s.io/pause:3.10"

// PodWrapper builds a corev1.Pod. Methods mutate and return the wrapper so calls chain.
type PodWrapper struct{ corev1.Pod }

// Pod starts a pod named name in namespace "default" with restartPolicy Always
// and no containers.
func Pod(name string) *PodWrapper {
	return &PodWrapper{corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways},
	}}
}

// Obj returns a deep copy, so one wrapper can stamp out several pods.
func (p *PodWrapper) Obj() *corev1.Pod { return p.DeepCopy() }

func (p *PodWrapper) Namespace(ns string) *PodWrapper { p.ObjectMeta.Namespace = ns; return p }
func (p *PodWrapper) UID(uid string) *PodWrapper      { p.ObjectMeta.UID = types.UID(uid); return p }
func (p *PodWrapper) ResourceVersion(rv string) *PodWrapper {
	p.ObjectMeta.ResourceVersion = rv
	return p
}

// Label sets one label.
func (p *PodWrapper) Label(k, v string) *PodWrapper {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[k] = v
	return p
}

// Annotation sets one annotation.
func (p *PodWrapper) Annotation(k, v string) *PodWrapper {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[k] = v
	return p
}

// Container appends a regular container.
func (p *PodWrapper) Container(c *ContainerWrapper) *PodWrapper {
	p.Spec.Containers = append(p.Spec.Containers, *c.Obj())
	return p
}

// InitContainer appends a non-restartable (classic) init container.
func (p *PodWrapper) InitContainer(c *ContainerWrapper) *PodWrapper {
	p.Spec.InitContainers = append(p.Spec.InitContainers, *c.Obj())
	return p
}

// Sidecar appends a restartable init container (restartPolicy Always).
func (p *PodWrapper) Sidecar(c *ContainerWrapper) *PodWrapper {
	ctr := *c.Obj()
	always := corev1.ContainerRestartPolicyAlways
	ctr.RestartPolicy = &always
	p.Spec.InitContainers = append(p.Spec.InitContainers, ctr)
	return p
}

// EphemeralContainer appends an ephemeral container (only meaningful for
// in-memory tests: the apiserver adds these through its own subresource).
func (p *PodWrapper) EphemeralContainer(name string) *PodWrapper {
	p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: DefaultImage},
	})
	return p
}

// PodRequests sets pod-level spec.resources.requests; an empty string leaves that resource unset.
func (p *PodWrapper) PodRequests(cpu, memory string) *PodWrapper {
	if p.Spec.Resources == nil {
		p.Spec.Resources = &corev1.ResourceRequirements{}
	}
	p.Spec.Resources.Requests = merge(p.Spec.Resources.Requests, List(cpu, memory))
	return p
}

// PodLimits sets pod-level spec.resources.limits; an empty string leaves that resource unset.
func (p *PodWrapper) PodLimits(cpu, memory string) *PodWrapper {
	if p.Spec.Resources == nil {
		p.Spec.Resources = &corev1.ResourceRequirements{}
	}
	p.Spec.Resources.Limits = merge(p.Spec.Resources.Limits, List(cpu, memory))
	return p
}

// PodResources replaces spec.resources wholesale.
func (p *PodWrapper) PodResources(r *corev1.ResourceRequirements) *PodWrapper {
	p.Spec.Resources = r.DeepCopy()
	return p
}

func (p *PodWrapper) RestartPolicy(rp corev1.RestartPolicy) *PodWrapper {
	p.Spec.RestartPolicy = rp
	return p
}

// Node binds the pod to a node (spec.nodeName), bypassing the scheduler.
func (p *PodWrapper) Node(name string) *PodWrapper { p.Spec.NodeName = name; return p }

// PriorityClass sets spec.priorityClassName, from which the apiserver sets
// spec.priority.
func (p *PodWrapper) PriorityClass(name string) *PodWrapper {
	p.Spec.PriorityClassName = name
	return p
}

// SchedulingGate adds a scheduling gate, which keeps the pod Pending and off
// every kubelet: handy for apiserver-only tests.
func (p *PodWrapper) SchedulingGate(name string) *PodWrapper {
	p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: name})
	return p
}

// OS sets spec.os.name.
func (p *PodWrapper) OS(name corev1.OSName) *PodWrapper {
	p.Spec.OS = &corev1.PodOS{Name: name}
	return p
}

// TerminationGracePeriod sets spec.terminationGracePeriodSeconds.
func (p *PodWrapper) TerminationGracePeriod(seconds int64) *PodWrapper {
	p.Spec.TerminationGracePeriodSeconds = &seconds
	return p
}

// QOS sets status.qosClass, as the apiserver does on create.
func (p *PodWrapper) QOS(c corev1.PodQOSClass) *PodWrapper { p.Status.QOSClass = c; return p }

// Phase sets status.phase.
func (p *PodWrapper) Phase(ph corev1.PodPhase) *PodWrapper { p.Status.Phase = ph; return p }

// Running marks the pod Running with every regular container running and
// reporting status resources equal to its spec, as a resize-capable kubelet does.
func (p *PodWrapper) Running() *PodWrapper {
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name:               c.Name,
			State:              corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			AllocatedResources: c.Resources.Requests.DeepCopy(),
			Resources:          c.Resources.DeepCopy(),
		})
	}
	return p
}

// ContainerStatus appends a raw container status, for states Running cannot express.
func (p *PodWrapper) ContainerStatus(s corev1.ContainerStatus) *PodWrapper {
	p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, s)
	return p
}

// ContainerWrapper builds a corev1.Container.
type ContainerWrapper struct{ corev1.Container }

// Container starts a container with DefaultImage and no resources.
func Container(name string) *ContainerWrapper {
	return &ContainerWrapper{corev1.Container{Name: name, Image: DefaultImage}}
}

// Obj returns a deep copy.
func (c *ContainerWrapper) Obj() *corev1.Container { return c.DeepCopy() }

func (c *ContainerWrapper) Image(img string) *ContainerWrapper { c.Container.Image = img; return c }

func (c *ContainerWrapper) Command(cmd ...string) *ContainerWrapper {
	c.Container.Command = cmd
	return c
}

func (c *ContainerWrapper) Args(args ...string) *ContainerWrapper { c.Container.Args = args; return c }

// Requests sets cpu and memory requests; an empty string leaves that resource unset.
func (c *ContainerWrapper) Requests(cpu, memory string) *ContainerWrapper {
	c.Resources.Requests = merge(c.Resources.Requests, List(cpu, memory))
	return c
}

// Limits sets cpu and memory limits; an empty string leaves that resource unset.
func (c *ContainerWrapper) Limits(cpu, memory string) *ContainerWrapper {
	c.Resources.Limits = merge(c.Resources.Limits, List(cpu, memory))
	return c
}

// Request sets one request of any resource name.
func (c *ContainerWrapper) Request(name corev1.ResourceName, q string) *ContainerWrapper {
	c.Resources.Requests = merge(c.Resources.Requests, corev1.ResourceList{name: resource.MustParse(q)})
	return c
}

// Limit sets one limit of any resource name.
func (c *ContainerWrapper) Limit(name corev1.ResourceName, q string) *ContainerWrapper {
	c.Resources.Limits = merge(c.Resources.Limits, corev1.ResourceList{name: resource.MustParse(q)})
	return c
}

// ResizePolicy sets the resize restart policy for one resource, replacing an earlier one.
func (c *ContainerWrapper) ResizePolicy(name corev1.ResourceName, rp corev1.ResourceResizeRestartPolicy) *ContainerWrapper {
	for i := range c.Container.ResizePolicy {
		if c.Container.ResizePolicy[i].ResourceName == name {
			c.Container.ResizePolicy[i].RestartPolicy = rp
			return c
		}
	}
	c.Container.ResizePolicy = append(c.Container.ResizePolicy, corev1.ContainerResizePolicy{ResourceName: name, RestartPolicy: rp})
	return c
}

// List makes a ResourceList of cpu and memory; an empty string leaves that resource out.
func List(cpu, memory string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		l[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return l
}

// Requirements makes ResourceRequirements from two lists (either may be nil).
func Requirements(requests, limits corev1.ResourceList) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{}
	if len(requests) > 0 {
		r.Requests = requests
	}
	if len(limits) > 0 {
		r.Limits = limits
	}
	return r
}

func merge(dst, src corev1.ResourceList) corev1.ResourceList {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = corev1.ResourceList{}
	}
	for k, v := range src {
		dst[k] = v
	}
	return dst
}

// Owner sets the controller owner reference.
func (p *PodWrapper) Owner(kind, name, uid string) *PodWrapper {
	yes := true
	p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID(uid), Controller: &yes})
	return p
}

// Priority sets spec.priority (what the priority admission plugin resolves
// priorityClassName to).
func (p *PodWrapper) Priority(v int32) *PodWrapper { p.Spec.Priority = &v; return p }

// PreemptionPolicy sets spec.preemptionPolicy.
func (p *PodWrapper) PreemptionPolicy(pp corev1.PreemptionPolicy) *PodWrapper {
	p.Spec.PreemptionPolicy = &pp
	return p
}

// NodeSelector sets one nodeSelector entry.
func (p *PodWrapper) NodeSelector(k, v string) *PodWrapper {
	if p.Spec.NodeSelector == nil {
		p.Spec.NodeSelector = map[string]string{}
	}
	p.Spec.NodeSelector[k] = v
	return p
}

// Toleration adds a toleration of key with any value and effect.
func (p *PodWrapper) Toleration(key string) *PodWrapper {
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists})
	return p
}

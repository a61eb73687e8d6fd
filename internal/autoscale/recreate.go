package autoscale

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	schedhelper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/resize"
)

// NodePods is a node and the pods bound to it, for Placeable.
type NodePods struct {
	Node *corev1.Node
	Pods []*corev1.Pod
}

// Recreatable says whether evicting p gets it recreated somewhere else: only
// a pod whose controller makes a replacement the scheduler places anew. It
// returns the controller's reference, or why not.
func Recreatable(p *corev1.Pod) (*metav1.OwnerReference, error) {
	ref := metav1.GetControllerOf(p)
	if ref == nil {
		return nil, fmt.Errorf("pod has no controller: nothing would recreate it")
	}
	switch ref.Kind {
	case "ReplicaSet", "StatefulSet", "ReplicationController":
		return ref, nil
	case "DaemonSet":
		return nil, fmt.Errorf("pod of DaemonSet %s: its replacement would return to the same node", ref.Name)
	}
	return nil, fmt.Errorf("pod of %s %s: tailor only recreates pods of ReplicaSets, StatefulSets and ReplicationControllers", ref.Kind, ref.Name)
}

// RecreatedContainers is each resized container of p with desired applied:
// every cpu and memory request and limit it will be recreated with, so the
// replacement matches the pod as tailor would have resized it in place.
func RecreatedContainers(p *corev1.Pod, desired resize.Desired) []v1alpha1.RecreatedContainer {
	names := make([]string, 0, len(desired.Containers))
	for n := range desired.Containers {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []v1alpha1.RecreatedContainer
	for _, n := range names {
		c := findContainer(p, n)
		if c == nil {
			continue
		}
		rc := v1alpha1.RecreatedContainer{Name: n}
		want := desired.Containers[n]
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := pickQuantity(want.Requests, c.Resources.Requests, r); ok {
				if rc.Requests == nil {
					rc.Requests = corev1.ResourceList{}
				}
				rc.Requests[r] = q
			}
			if q, ok := pickQuantity(want.Limits, c.Resources.Limits, r); ok {
				if rc.Limits == nil {
					rc.Limits = corev1.ResourceList{}
				}
				rc.Limits[r] = q
			}
		}
		out = append(out, rc)
	}
	return out
}

func pickQuantity(want, have corev1.ResourceList, r corev1.ResourceName) (resource.Quantity, bool) {
	if q, ok := want[r]; ok {
		return q.DeepCopy(), true
	}
	q, ok := have[r]
	return q.DeepCopy(), ok
}

// Placeable reports whether a replacement of p with the given containers
// could be scheduled: on some Ready, schedulable node whose taints p
// tolerates and whose labels its required node affinity and nodeSelector
// match, the allocatable less the requests of the pods that would stay must
// hold the replacement's requests. Pods of lower priority count as gone
// when p may preempt them, as the scheduler's preemption would make them.
// It returns the first such node. It is a guard against evicting a pod that
// cannot come back, not a scheduler: ports, volumes, topology spread and
// inter-pod affinity are not checked.
func Placeable(p *corev1.Pod, containers []v1alpha1.RecreatedContainer, nodes []NodePods) (string, bool) {
	replacement := p.DeepCopy()
	for _, rc := range containers {
		for i := range replacement.Spec.Containers {
			c := &replacement.Spec.Containers[i]
			if c.Name == rc.Name {
				c.Resources.Requests = mergeList(c.Resources.Requests, rc.Requests)
				c.Resources.Limits = mergeList(c.Resources.Limits, rc.Limits)
			}
		}
	}
	need := resourcehelper.PodRequests(replacement, resourcehelper.PodResourcesOptions{})
	priority := schedhelper.PodPriority(p)
	mayPreempt := p.Spec.PreemptionPolicy == nil || *p.Spec.PreemptionPolicy != corev1.PreemptNever
	affinity := nodeaffinity.GetRequiredNodeAffinity(p)
	for _, np := range nodes {
		n := np.Node
		if n == nil || n.Spec.Unschedulable || !nodeReady(n) {
			continue
		}
		if _, untolerated := schedhelper.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, p.Spec.Tolerations, noScheduleTaints, false); untolerated {
			continue
		}
		if ok, err := affinity.Match(n); err != nil || !ok {
			continue
		}
		used := corev1.ResourceList{}
		for _, o := range np.Pods {
			if o.UID == p.UID || o.Status.Phase == corev1.PodSucceeded || o.Status.Phase == corev1.PodFailed {
				continue
			}
			if mayPreempt && schedhelper.PodPriority(o) < priority {
				continue
			}
			reqs := resourcehelper.PodRequests(o, resourcehelper.PodResourcesOptions{UseStatusResources: true, InPlacePodLevelResourcesVerticalScalingEnabled: true})
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				q := used[r]
				q.Add(reqs[r])
				used[r] = q
			}
		}
		fits := true
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			free := n.Status.Allocatable[r].DeepCopy()
			free.Sub(used[r])
			if n := need[r]; n.Cmp(free) > 0 {
				fits = false
			}
		}
		if fits {
			return n.Name, true
		}
	}
	return "", false
}

func mergeList(dst, src corev1.ResourceList) corev1.ResourceList {
	if len(src) == 0 {
		return dst
	}
	out := dst.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for k, v := range src {
		out[k] = v.DeepCopy()
	}
	return out
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// noScheduleTaints are the taints that keep a new pod off a node.
func noScheduleTaints(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}

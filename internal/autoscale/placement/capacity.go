package placement

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/tailorhq/tailor/internal/resize"
)

// NewPodRoomInput is what NewPodRoom reads.
type NewPodRoomInput struct {
	// Template is the workload's pod template: its node selector, required
	// node affinity and tolerations say which nodes its pods may land on.
	Template *corev1.PodTemplateSpec
	// DaemonSet: every matching node runs one of the workload's pods, so a
	// new pod must fit the node that needs it, not merely some node.
	DaemonSet bool
	// Free counts each node's room as its allocatable less what the pods
	// bound to it request (the pods of Own excepted), not its allocatable
	// alone: for a DaemonSet, whose replacement returns to its node, and
	// while a pod tailor sized waits unschedulable.
	Free bool
	// Own says which pods are the workload's own and make way for the new
	// pod (a DaemonSet's pod on the node it replaces); nil: none.
	Own   func(*corev1.Pod) bool
	Nodes []NodePods
}

// NewPodRoom is the most of each resource a new pod of the workload may
// request and still have a node that could hold it: over the Ready,
// schedulable nodes whose taints the template tolerates and whose labels its
// node selector and required node affinity match, the largest allocatable
// (or free room, with Free), or for a DaemonSet the smallest. Each resource
// is counted on its own. Nil when no node matches: nothing is known to
// hold, and nothing is cut for it. Like Placeable it is a guard, not a
// scheduler: ports, volumes and inter-pod affinity are not read.
func NewPodRoom(in NewPodRoomInput) corev1.ResourceList {
	if in.Template == nil {
		return nil
	}
	p := &corev1.Pod{ObjectMeta: in.Template.ObjectMeta, Spec: in.Template.Spec}
	affinity := nodeaffinity.GetRequiredNodeAffinity(p)
	var out corev1.ResourceList
	for _, np := range in.Nodes {
		n := np.Node
		if !mayLand(p, affinity, n) {
			continue
		}
		room := corev1.ResourceList{}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := n.Status.Allocatable[r]; ok {
				room[r] = q.DeepCopy()
			}
		}
		if in.Free || in.DaemonSet {
			for _, o := range np.Pods {
				if o.Status.Phase == corev1.PodSucceeded || o.Status.Phase == corev1.PodFailed || (in.Own != nil && in.Own(o)) {
					continue
				}
				reqs := resize.NodeRequests(o)
				for r, q := range room {
					q.Sub(reqs[r])
					room[r] = q
				}
			}
		}
		if out == nil {
			out = room
			continue
		}
		for r, q := range room {
			have, ok := out[r]
			switch {
			case !ok:
			case in.DaemonSet && q.Cmp(have) < 0, !in.DaemonSet && q.Cmp(have) > 0:
				out[r] = q
			}
		}
	}
	for r, q := range out {
		if q.Sign() < 0 {
			out[r] = resource.Quantity{Format: q.Format}
		}
	}
	return out
}

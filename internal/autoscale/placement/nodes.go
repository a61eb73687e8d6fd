package placement

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	schedhelper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/resize"
)

// NodePods is a node and the pods bound to it, for Placeable.
type NodePods struct {
	Node *corev1.Node
	Pods []*corev1.Pod
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
		// A sidecar's too: it runs beside the others, and is counted.
		if c := podcontainers.Named(replacement, rc.Name); c != nil {
			c.Resources.Requests = mergeList(c.Resources.Requests, rc.Requests)
			c.Resources.Limits = mergeList(c.Resources.Limits, rc.Limits)
		}
	}
	need := resourcehelper.PodRequests(replacement, resourcehelper.PodResourcesOptions{})
	priority := schedhelper.PodPriority(p)
	mayPreempt := p.Spec.PreemptionPolicy == nil || *p.Spec.PreemptionPolicy != corev1.PreemptNever
	affinity := nodeaffinity.GetRequiredNodeAffinity(p)
	for _, np := range nodes {
		n := np.Node
		if !mayLand(p, affinity, n) {
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
			reqs := resize.NodeRequests(o)
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

// mayLand reports whether the scheduler may place p on n: n is Ready and
// schedulable, p tolerates its NoSchedule and NoExecute taints, and n
// matches p's node selector and required node affinity (affinity, read from
// p once by the caller).
func mayLand(p *corev1.Pod, affinity nodeaffinity.RequiredNodeAffinity, n *corev1.Node) bool {
	if n == nil || n.Spec.Unschedulable || !nodeReady(n) {
		return false
	}
	if _, untolerated := schedhelper.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, p.Spec.Tolerations, noScheduleTaints, false); untolerated {
		return false
	}
	ok, err := affinity.Match(n)
	return err == nil && ok
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

//go:build controller

package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kubelet stands in for the kubelets of the nodes a test's pods are bound
// to. Sync does, for each pod with a resize to answer, what the kubelet's
// allocation manager (pkg/kubelet/allocation, handlePodResourcesResize) and
// status manager write after a resize:
//
//   - status.observedGeneration = metadata.generation, whatever the outcome
//     (the status manager stamps every status it writes);
//   - the resize fits next to the other pods' allocated requests on the node:
//     allocatedResources and resources of each container = its spec, and no
//     resize condition (accepted and actuated at once);
//   - it can never fit (the pod alone asks more than the node's
//     allocatable): PodResizePending, reason Infeasible (the apiserver
//     refuses such a resize itself since 1.36, so this needs a node whose
//     allocatable shrank after the resize was admitted);
//   - it fits the node but not next to the others: PodResizePending, reason
//     Deferred; retried on every later Sync, as the kubelet retries deferred
//     resizes when pods leave;
//   - with Actuate false, an accepted resize stops half way:
//     allocatedResources = spec, resources still the old ones, and
//     PodResizeInProgress, as while the runtime applies it.
//
// Each condition carries observedGeneration = the generation it answers.
//
// What it simplifies: admission is only the cpu and memory requests fit
// (no other admit handlers, no pod overhead, no pod-level resources
// accounting, no static CPU or memory manager policies); the runtime fails
// only when a test sets Fail; actuation is instant; and a resize that makes
// limits lower than the usage is accepted unless Fail says otherwise (the
// real kubelet refuses to lower a memory limit below current usage, leaving it
// InProgress with an error).
type kubelet struct {
	c client.Client
	// Actuate false leaves accepted resizes InProgress.
	Actuate bool
	// Fail, when set, says the runtime's error for an accepted resize of
	// a pod ("" for none): the resize stops half way, as with Actuate
	// false, but InProgress with reason Error and that message, as the
	// real kubelet leaves a memory limit it may not lower below the
	// container's usage.
	Fail func(*corev1.Pod) string
}

func newKubelet(c client.Client) *kubelet { return &kubelet{c: c, Actuate: true} }

// Sync answers every pending resize of the pods in namespace ns.
func (k *kubelet) Sync(t testing.TB, ns string) {
	t.Helper()
	ctx := context.Background()
	var pods corev1.PodList
	if err := k.c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatalf("kubelet: listing pods: %v", err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" || !p.DeletionTimestamp.IsZero() || !resizePending(p) {
			continue
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &corev1.Pod{}
			if err := k.c.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
				return err
			}
			if !resizePending(cur) {
				return nil
			}
			if err := k.answer(ctx, cur); err != nil {
				return err
			}
			return k.c.Status().Update(ctx, cur)
		})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("kubelet: answering the resize of pod %s/%s: %v", p.Namespace, p.Name, err)
		}
	}
}

// resizePending: a generation not yet observed, a resize still pending or
// in progress, or containers whose allocation differs from the spec.
func resizePending(p *corev1.Pod) bool {
	if p.Generation > p.Status.ObservedGeneration {
		return true
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress {
			return true
		}
	}
	for _, c := range p.Spec.Containers {
		st := containerStatus(p, c.Name)
		if st == nil || !equality.Semantic.DeepEqual(st.AllocatedResources, c.Resources.Requests) {
			return true
		}
	}
	return false
}

func containerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// answer sets p's status as the kubelet would after looking at its resize.
func (k *kubelet) answer(ctx context.Context, p *corev1.Pod) error {
	node := &corev1.Node{}
	if err := k.c.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node); err != nil {
		if apierrors.IsNotFound(err) {
			// A pod whose node is gone has no kubelet to answer.
			return nil
		}
		return err
	}
	var onNode corev1.PodList
	if err := k.c.List(ctx, &onNode, client.MatchingFields{"spec.nodeName": p.Spec.NodeName}); err != nil {
		return err
	}
	want := podRequests(p, func(c corev1.Container) corev1.ResourceList { return c.Resources.Requests })
	used := corev1.ResourceList{}
	for i := range onNode.Items {
		o := &onNode.Items[i]
		if o.UID == p.UID || !o.DeletionTimestamp.IsZero() {
			continue
		}
		addTo(used, podRequests(o, allocated(o)))
	}
	reason, msg := "", ""
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		w, a := want[r], node.Status.Allocatable[r]
		u := used[r]
		free := a.DeepCopy()
		free.Sub(u)
		switch {
		case w.Cmp(a) > 0:
			reason = corev1.PodReasonInfeasible
			msg = fmt.Sprintf("Node didn't have enough capacity: %s, requested: %d, capacity: %d", r, amount(r, w), amount(r, a))
		case w.Cmp(free) > 0 && reason == "":
			reason = corev1.PodReasonDeferred
			msg = fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", r, amount(r, w), amount(r, u), amount(r, a))
		}
	}
	gen := p.Generation
	p.Status.ObservedGeneration = gen
	conds := p.Status.Conditions[:0]
	for _, c := range p.Status.Conditions {
		if c.Type != corev1.PodResizePending && c.Type != corev1.PodResizeInProgress {
			conds = append(conds, c)
		}
	}
	p.Status.Conditions = conds
	now := metav1.Now()
	failed := ""
	if k.Fail != nil {
		failed = k.Fail(p)
	}
	if reason != "" {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: reason, Message: msg,
			ObservedGeneration: gen, LastProbeTime: now, LastTransitionTime: now,
		})
		return nil
	}
	for _, c := range p.Spec.Containers {
		st := containerStatus(p, c.Name)
		if st == nil {
			continue
		}
		st.AllocatedResources = c.Resources.Requests.DeepCopy()
		if k.Actuate && failed == "" {
			st.Resources = c.Resources.DeepCopy()
		}
	}
	switch {
	case failed != "":
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue, Reason: corev1.PodReasonError, Message: failed,
			ObservedGeneration: gen, LastProbeTime: now, LastTransitionTime: now,
		})
	case !k.Actuate:
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue,
			ObservedGeneration: gen, LastProbeTime: now, LastTransitionTime: now,
		})
	}
	return nil
}

// allocated reads a pod's allocation from its container statuses, falling
// back to its spec for a container that reports none.
func allocated(p *corev1.Pod) func(corev1.Container) corev1.ResourceList {
	return func(c corev1.Container) corev1.ResourceList {
		if st := containerStatus(p, c.Name); st != nil && st.AllocatedResources != nil {
			return st.AllocatedResources
		}
		return c.Resources.Requests
	}
}

func podRequests(p *corev1.Pod, of func(corev1.Container) corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range p.Spec.Containers {
		addTo(out, of(c))
	}
	return out
}

func addTo(dst, src corev1.ResourceList) {
	for r, q := range src {
		cur := dst[r]
		cur.Add(q)
		dst[r] = cur
	}
}

// amount prints cpu in millicores and memory in bytes, as the kubelet's
// fit messages do.
func amount(r corev1.ResourceName, q resource.Quantity) int64 {
	if r == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// conditionsText is a pod's resize conditions, for failure messages.
func conditionsText(p *corev1.Pod) string {
	var parts []string
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress {
			parts = append(parts, fmt.Sprintf("%s=%s(%s, gen %d)", c.Type, c.Status, c.Reason, c.ObservedGeneration))
		}
	}
	return strings.Join(parts, ", ")
}

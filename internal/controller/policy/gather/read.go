package gather

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/newpods"
	"github.com/tailorhq/tailor/internal/autoscale/placement"
	"github.com/tailorhq/tailor/internal/controller/policy/store"
	"github.com/tailorhq/tailor/internal/nodeclass"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/resize"
)

// Selector is the policy's own selector (spec.Selector) or its target's,
// with the target's pod template when it has one (what new pods are sized
// from at admission).
func (r *Reader) Selector(ctx context.Context, policy *v1alpha1.TailorPolicy, spec Spec) (labels.Selector, *corev1.PodTemplateSpec, error) {
	if spec.Selector != nil {
		return spec.Selector, nil, nil
	}
	ref := policy.Spec.TargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, nil, &InvalidPolicyError{Reason: v1alpha1.ReasonInvalidPolicy, Err: fmt.Errorf("targetRef.apiVersion: %w", err)}
	}
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(gv.WithKind(ref.Kind))
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: policy.Namespace, Name: ref.Name}, target); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil, nil, &InvalidPolicyError{Reason: v1alpha1.ReasonTargetNotFound,
				Err: fmt.Errorf("targetRef %s %s/%s: %w", ref.Kind, policy.Namespace, ref.Name, err)}
		}
		return nil, nil, fmt.Errorf("reading targetRef %s %s/%s: %w", ref.Kind, policy.Namespace, ref.Name, err)
	}
	raw, found, err := unstructured.NestedMap(target.Object, "spec", "selector")
	if err != nil || !found {
		return nil, nil, &InvalidPolicyError{Reason: v1alpha1.ReasonTargetNotFound,
			Err: fmt.Errorf("targetRef %s %s/%s has no spec.selector", ref.Kind, policy.Namespace, ref.Name)}
	}
	ls := &metav1.LabelSelector{}
	if err := runtimeConvert(raw, ls); err != nil {
		return nil, nil, &InvalidPolicyError{Reason: v1alpha1.ReasonInvalidSelector, Err: fmt.Errorf("targetRef %s/%s selector: %w", ref.Kind, ref.Name, err)}
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, nil, &InvalidPolicyError{Reason: v1alpha1.ReasonInvalidSelector, Err: fmt.Errorf("targetRef %s/%s selector: %w", ref.Kind, ref.Name, err)}
	}
	return sel, podTemplate(target), nil
}

// podTemplate is the target's spec.template cut to what sizing a new pod
// reads (at 1,000 policies a whole template each would weigh on the
// manager), or nil when the target has none that parses.
func podTemplate(target *unstructured.Unstructured) *corev1.PodTemplateSpec {
	raw, found, err := unstructured.NestedMap(target.Object, "spec", "template")
	if err != nil || !found {
		return nil
	}
	full := &corev1.PodTemplateSpec{}
	if err := runtimeConvert(raw, full); err != nil {
		return nil
	}
	slim := func(cs []corev1.Container) []corev1.Container {
		out := make([]corev1.Container, len(cs))
		for i, c := range cs {
			out[i] = corev1.Container{Name: c.Name, Resources: c.Resources, ResizePolicy: c.ResizePolicy, RestartPolicy: c.RestartPolicy}
		}
		return out
	}
	out := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: slim(full.Spec.Containers), InitContainers: slim(full.Spec.InitContainers),
		Resources: full.Spec.Resources, OS: full.Spec.OS,
		// Which nodes a new pod may land on: its size is cut to theirs.
		NodeSelector: full.Spec.NodeSelector, Tolerations: full.Spec.Tolerations,
	}}
	if a := full.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		out.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
		}}
	}
	return out
}

// pods lists the running pods a policy's label selector matches (the cheap
// first filter, before their owners are: ownPods), and those not yet bound
// to a node, each sorted by name.
func (r *Reader) pods(ctx context.Context, state *store.PolicyState) (running, unbound []*corev1.Pod, err error) {
	var list corev1.PodList
	if err := r.Client.List(ctx, &list, client.InNamespace(state.Key.Namespace), client.MatchingLabelsSelector{Selector: state.Selector}); err != nil {
		return nil, nil, fmt.Errorf("listing pods for policy %s: %w", state.Key, err)
	}
	for i := range list.Items {
		p := &list.Items[i]
		switch {
		case !p.DeletionTimestamp.IsZero():
		case p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "":
			running = append(running, p)
		case p.Status.Phase == corev1.PodPending && p.Spec.NodeName == "":
			unbound = append(unbound, p)
		}
	}
	sort.Slice(running, func(i, j int) bool { return running[i].Name < running[j].Name })
	sort.Slice(unbound, func(i, j int) bool { return unbound[i].Name < unbound[j].Name })
	return running, unbound, nil
}

// hpas reads the HorizontalPodAutoscalers of the policy's namespace from
// the cache (an informer of every HPA in the cluster: there are few).
func (r *Reader) hpas(ctx context.Context, namespace string) ([]autoscalingv2.HorizontalPodAutoscaler, error) {
	var list autoscalingv2.HorizontalPodAutoscalerList
	if err := r.Client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing HorizontalPodAutoscalers of namespace %s: %w", namespace, err)
	}
	return list.Items, nil
}

// roomNodes reads the nodes a new pod of the policy's target could land
// on, when new pods are sized at admission: with the pods bound to them for
// a DaemonSet (whose new pod must fit the node it replaces one on) and
// while a pod waits for a node (it may be one tailor sized that waits
// unschedulable, whose room is then what is free); nil when new pods are
// not sized.
func (r *Reader) roomNodes(ctx context.Context, policy *v1alpha1.TailorPolicy, state *store.PolicyState, unbound []*corev1.Pod) ([]placement.NodePods, error) {
	ref := policy.Spec.TargetRef
	if ref == nil || state.Template == nil || policy.Spec.Mode() == v1alpha1.UpdateModeOff || !newpods.ApplyOnCreate(&policy.Spec) {
		return nil, nil
	}
	if len(unbound) > 0 || ref.Kind == "DaemonSet" {
		return r.NodesWithPods(ctx)
	}
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	out := make([]placement.NodePods, 0, len(nodes.Items))
	for i := range nodes.Items {
		out = append(out, placement.NodePods{Node: &nodes.Items[i]})
	}
	return out, nil
}

// namespaceRules reads the namespace's LimitRanges and ResourceQuotas from
// the cache: the apiserver judges every pod and resize tailor asks for by
// them.
func (r *Reader) namespaceRules(ctx context.Context, namespace string) (*nsrules.Rules, error) {
	// Read only (nsrules copies what it changes): not copied at every sync.
	var ranges corev1.LimitRangeList
	if err := r.Client.List(ctx, &ranges, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing LimitRanges of namespace %s: %w", namespace, err)
	}
	var quotas corev1.ResourceQuotaList
	if err := r.Client.List(ctx, &quotas, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing ResourceQuotas of namespace %s: %w", namespace, err)
	}
	return &nsrules.Rules{LimitRanges: ranges.Items, Quotas: quotas.Items}, nil
}

// largestNode is the largest allocatable among the cluster's nodes, from
// the cache: what no container can use more of.
func (r *Reader) largestNode(ctx context.Context) (map[corev1.ResourceName]podchange.DefaultBound, error) {
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	ptrs := make([]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		ptrs[i] = &nodes.Items[i]
	}
	return podchange.LargestAllocatable(ptrs), nil
}

// Nodes reads each node the pods run on once, with the pods bound to it. A
// node that is gone is left out: its pods are held, the others go on.
func (r *Reader) Nodes(ctx context.Context, pods []*corev1.Pod) (map[string]*resize.NodeState, error) {
	out := map[string]*resize.NodeState{}
	for _, p := range pods {
		name := p.Spec.NodeName
		if _, done := out[name]; done {
			continue
		}
		node := &corev1.Node{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			if apierrors.IsNotFound(err) {
				out[name] = nil
				continue
			}
			return nil, fmt.Errorf("reading node %s: %w", name, err)
		}
		// Read only (the planner copies what it changes): the cache's
		// objects are not copied for it.
		var bound corev1.PodList
		if err := r.Client.List(ctx, &bound, client.MatchingFields{"spec.nodeName": name}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing pods on node %s: %w", name, err)
		}
		ns := &resize.NodeState{Name: node.Name, PreemptionPolicy: node.Spec.PodPreemptionPolicy, Allocatable: node.Status.Allocatable,
			Labels: node.Labels, DeclaredFeatures: node.Status.DeclaredFeatures}
		for i := range bound.Items {
			ns.Pods = append(ns.Pods, &bound.Items[i])
		}
		out[name] = ns
	}
	for name, ns := range out {
		if ns == nil {
			delete(out, name)
		}
	}
	return out, nil
}

// podNodes reads each node the pods run on once, from the cache: its
// capacity, by name (a node that is gone has none, and its pods' figures
// are not checked against one), and, with spec.nodeClasses (classes not
// nil), its class (nodeclass.Of; a node that is gone has none).
func (r *Reader) podNodes(ctx context.Context, pods []*corev1.Pod, classes *v1alpha1.NodeClasses) (capacity map[string]corev1.ResourceList, classOf map[string]string, err error) {
	capacity = map[string]corev1.ResourceList{}
	if classes != nil {
		classOf = map[string]string{}
	}
	for _, p := range pods {
		if _, seen := capacity[p.Spec.NodeName]; seen {
			continue
		}
		node := &corev1.Node{}
		switch err := r.Client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node); {
		case apierrors.IsNotFound(err):
			capacity[p.Spec.NodeName] = nil
		case err != nil:
			return nil, nil, fmt.Errorf("reading node %s: %w", p.Spec.NodeName, err)
		default:
			capacity[p.Spec.NodeName] = node.Status.Capacity
			if classes != nil {
				classOf[p.Spec.NodeName] = nodeclass.Of(node, classes.Label)
			}
		}
	}
	return capacity, classOf, nil
}

// NodesWithPods lists every node with the pods bound to it.
func (r *Reader) NodesWithPods(ctx context.Context) ([]placement.NodePods, error) {
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	out := make([]placement.NodePods, 0, len(nodes.Items))
	for i := range nodes.Items {
		n := &nodes.Items[i]
		var pods corev1.PodList
		if err := r.Client.List(ctx, &pods, client.MatchingFields{"spec.nodeName": n.Name}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing pods on node %s: %w", n.Name, err)
		}
		np := placement.NodePods{Node: n}
		for j := range pods.Items {
			np.Pods = append(np.Pods, &pods.Items[j])
		}
		out = append(out, np)
	}
	return out, nil
}

// runtimeConvert turns an unstructured map into a typed value.
func runtimeConvert(in map[string]any, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

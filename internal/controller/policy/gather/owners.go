package gather

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/ownership"
)

// ReplicaSetMeta is what the controller reads of ReplicaSets: their
// metadata only, for their owner references (a pod's chain to its
// Deployment). The manager caches it metadata-only and trimmed.
func ReplicaSetMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"})
	return m
}

// VPAKind is the VerticalPodAutoscaler's kind, a CRD that may not be
// installed; it is read as unstructured (no dependency on its module).
var VPAKind = schema.GroupVersionKind{Group: "autoscaling.k8s.io", Version: "v1", Kind: "VerticalPodAutoscaler"}

// claimant is a policy as ownership.ClaimedBy sees it, sel its selector
// parsed (nil for a targetRef policy); ok is false for a policy that claims
// nothing (being deleted, or a selector policy whose selector does not
// parse: its own sync says so).
func claimant(p *v1alpha1.TailorPolicy, sel labels.Selector) (ownership.Claimant, bool) {
	if !p.DeletionTimestamp.IsZero() {
		return ownership.Claimant{}, false
	}
	c := ownership.Claimant{Name: p.Name, Created: p.CreationTimestamp.Time, RecommendOnly: p.Spec.Mode() == v1alpha1.UpdateModeOff}
	if ref := p.Spec.TargetRef; ref != nil {
		w := ownership.WorkloadOf(ref.APIVersion, ref.Kind, ref.Name)
		c.Target = &w
		return c, true
	}
	if sel == nil {
		return ownership.Claimant{}, false
	}
	c.Selector = sel
	return c, true
}

// claimants are the policies of the namespace, from the cache.
func (r *Reader) claimants(ctx context.Context, namespace string) ([]ownership.Claimant, error) {
	var list v1alpha1.TailorPolicyList
	// Read only (claimant copies what it keeps): the cache's policies, with
	// their statuses, are not copied for it at every sync.
	if err := r.Client.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the TailorPolicies of namespace %s: %w", namespace, err)
	}
	out := make([]ownership.Claimant, 0, len(list.Items))
	for i := range list.Items {
		p := &list.Items[i]
		var sel labels.Selector
		if p.Spec.TargetRef == nil && p.Spec.Selector != nil {
			var err error
			if sel, err = metav1.LabelSelectorAsSelector(p.Spec.Selector); err != nil {
				// It claims nothing: its own sync says so.
				continue
			}
		}
		if c, ok := claimant(p, sel); ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// chains reads the controller chain of each pod: the pod's controller and,
// for a ReplicaSet, the ReplicaSet's, from the cache of ReplicaSets'
// metadata, once per ReplicaSet.
func (r *Reader) chains(ctx context.Context, pods []*corev1.Pod) (map[types.UID]ownership.Chain, error) {
	type found struct {
		refs []metav1.OwnerReference
		ok   bool
	}
	replicaSets := map[string]found{}
	var readErr error
	out := make(map[types.UID]ownership.Chain, len(pods))
	for _, p := range pods {
		ns := p.Namespace
		out[p.UID] = ownership.ControllerChain(p.OwnerReferences, func(name string) ([]metav1.OwnerReference, bool) {
			if f, seen := replicaSets[name]; seen {
				return f.refs, f.ok
			}
			rs := ReplicaSetMeta()
			err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rs)
			switch {
			case apierrors.IsNotFound(err):
				// Not in the cache yet, or deleted: the chain ends at it.
			case err != nil:
				readErr = fmt.Errorf("reading ReplicaSet %s/%s: %w", ns, name, err)
			default:
				replicaSets[name] = found{refs: rs.OwnerReferences, ok: true}
				return rs.OwnerReferences, true
			}
			replicaSets[name] = found{}
			return nil, false
		})
		if readErr != nil {
			return nil, readErr
		}
	}
	return out, nil
}

// vpas are the VerticalPodAutoscalers of the namespace; none when the
// controller has no reader for them (their CRD was not installed when the
// manager started) or their CRD is gone.
func (r *Reader) vpas(ctx context.Context, namespace string) ([]ownership.VPA, error) {
	if r.VerticalPodAutoscalers == nil {
		return nil, nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(VPAKind.GroupVersion().WithKind(VPAKind.Kind + "List"))
	if err := r.VerticalPodAutoscalers.List(ctx, list, client.InNamespace(namespace)); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing the VerticalPodAutoscalers of namespace %s: %w", namespace, err)
	}
	out := make([]ownership.VPA, 0, len(list.Items))
	for _, u := range list.Items {
		if v, ok := vpaOf(&u); ok {
			out = append(out, v)
		}
	}
	return out, nil
}

// vpaOf reads what VPAOn needs of a VerticalPodAutoscaler; ok is false for
// one without a targetRef (the apiserver requires it).
func vpaOf(u *unstructured.Unstructured) (ownership.VPA, bool) {
	apiVersion, _, _ := unstructured.NestedString(u.Object, "spec", "targetRef", "apiVersion")
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "targetRef", "kind")
	name, _, _ := unstructured.NestedString(u.Object, "spec", "targetRef", "name")
	if kind == "" || name == "" {
		return ownership.VPA{}, false
	}
	mode, _, _ := unstructured.NestedString(u.Object, "spec", "updatePolicy", "updateMode")
	return ownership.VPA{Name: u.GetName(), Target: ownership.WorkloadOf(apiVersion, kind, name), Mode: mode}, true
}

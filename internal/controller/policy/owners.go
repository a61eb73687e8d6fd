package policy

import (
	"context"
	"fmt"
	"sort"
	"strings"

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

// EventConflict and EventVerticalPodAutoscaler say, once when it starts,
// that another TailorPolicy or a VerticalPodAutoscaler sizes some of the
// policy's pods.
const (
	EventConflict              = "Conflict"
	EventVerticalPodAutoscaler = "VerticalPodAutoscaler"
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

// owned is what the owner chains of the pods a policy's selector matches
// say about them.
type owned struct {
	// pods are those the policy sizes.
	pods []*corev1.Pod
	// chains are the pods' controller chains.
	chains []ownership.Chain
	// lost counts the pods another policy sizes, by its name.
	lost map[string]int
	// target names the policy that wins this targetRef policy's workload
	// itself ("" when this one does): another policy naming the same
	// workload, older or first by name. Its new pods are that policy's
	// even before any of them runs.
	target string
	// vpa is the VerticalPodAutoscaler that sets the resources of the
	// policy's target or of some of its pods, held is how many pods it
	// holds; vpa.Name is "" when there is none.
	vpa  ownership.VPA
	held int
}

// ownPods splits the pods the policy's label selector matches (the cheap
// first filter) by their controller chains: a targetRef policy's pods are
// those its target controls; of a pod several policies claim, only the
// winner's (ownership.ClaimedBy) are sized; a pod whose workload a
// VerticalPodAutoscaler sets the resources of is held. self is the policy
// as a claimant; others are every policy of the namespace, self included
// or not.
func ownPods(self ownership.Claimant, pods []*corev1.Pod, chains map[types.UID]ownership.Chain, others []ownership.Claimant, vpas []ownership.VPA) owned {
	claimants := []ownership.Claimant{self}
	for _, c := range others {
		if c.Name != self.Name {
			claimants = append(claimants, c)
		}
	}
	out := owned{lost: map[string]int{}}
	if self.Target != nil {
		out.vpa, _ = ownership.VPAOn(ownership.Chain{*self.Target}, vpas)
		// No labels: of the claimants of the workload itself only targetRef
		// policies can win over a targetRef policy.
		if w, ok := ownership.ClaimedBy(nil, ownership.Chain{*self.Target}, claimants); ok && !self.RecommendOnly && w.Name != self.Name {
			out.target = w.Name
		}
	}
	for _, p := range pods {
		chain, set := chains[p.UID], labels.Set(p.Labels)
		if !self.Claims(set, chain) {
			continue
		}
		if v, ok := ownership.VPAOn(chain, vpas); ok {
			if out.vpa.Name == "" || v.Name < out.vpa.Name {
				out.vpa = v
			}
			out.held++
			continue
		}
		// A policy in mode Off sizes nothing and recommends for every pod it
		// claims; of the others, one sizes the pod.
		if winner, _ := ownership.ClaimedBy(set, chain, claimants); !self.RecommendOnly && winner.Name != self.Name {
			out.lost[winner.Name]++
			continue
		}
		out.pods = append(out.pods, p)
		out.chains = append(out.chains, chain)
	}
	return out
}

// owners reads what ownPods decides on (the pods' chains, the namespace's
// policies and its VerticalPodAutoscalers) and calls it.
func (r *Reconciler) owners(ctx context.Context, policy *v1alpha1.TailorPolicy, selected []*corev1.Pod) (owned, error) {
	self, ok := claimant(policy)
	if !ok {
		// Validated before: a selector that parses, or a targetRef.
		return owned{pods: selected}, nil
	}
	chains, err := r.chains(ctx, selected)
	if err != nil {
		return owned{}, err
	}
	others, err := r.claimants(ctx, policy.Namespace)
	if err != nil {
		return owned{}, err
	}
	vpas, err := r.vpas(ctx, policy.Namespace)
	if err != nil {
		return owned{}, err
	}
	return ownPods(self, selected, chains, others, vpas), nil
}

// conflict says which policies size some of this one's pods, for the Ready
// condition; "" when none does.
func (o owned) conflict() string {
	if len(o.lost) == 0 && o.target == "" {
		return ""
	}
	names := make([]string, 0, len(o.lost))
	for n := range o.lost {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	if o.target != "" {
		parts = append(parts, fmt.Sprintf("TailorPolicy %s names the same workload", o.target))
	}
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("TailorPolicy %s sizes %d pod(s) this policy selects", n, o.lost[n]))
	}
	return strings.Join(parts, "; ") + " (of two policies claiming a pod, a targetRef policy wins over a selector policy, then the older, then the first by name): " +
		"this policy leaves them alone; narrow its selector, or delete one of the policies"
}

// vpaHeld says which VerticalPodAutoscaler holds the policy, for the Ready
// condition; "" when none does.
func (o owned) vpaHeld() string {
	if o.vpa.Name == "" {
		return ""
	}
	return fmt.Sprintf("%s sets the resources of %d pod(s) this policy selects: tailor holds them (no resize, no startup boost, no sizing at admission) "+
		"until the VerticalPodAutoscaler's updateMode is Off or it is deleted", o.vpa, o.held)
}

// claimant is a policy as ownership.ClaimedBy sees it; ok is false for a
// policy that claims nothing (being deleted, or a selector that does not
// parse: its own sync says so).
func claimant(p *v1alpha1.TailorPolicy) (ownership.Claimant, bool) {
	if !p.DeletionTimestamp.IsZero() {
		return ownership.Claimant{}, false
	}
	c := ownership.Claimant{Name: p.Name, Created: p.CreationTimestamp.Time, RecommendOnly: p.Spec.Mode() == v1alpha1.UpdateModeOff}
	if ref := p.Spec.TargetRef; ref != nil {
		w := ownership.WorkloadOf(ref.APIVersion, ref.Kind, ref.Name)
		c.Target = &w
		return c, true
	}
	if p.Spec.Selector == nil {
		return ownership.Claimant{}, false
	}
	sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
	if err != nil {
		return ownership.Claimant{}, false
	}
	c.Selector = sel
	return c, true
}

// claimants are the policies of the namespace, from the cache.
func (r *Reconciler) claimants(ctx context.Context, namespace string) ([]ownership.Claimant, error) {
	var list v1alpha1.TailorPolicyList
	// Read only (claimant copies what it keeps): the cache's policies, with
	// their statuses, are not copied for it at every sync.
	if err := r.Client.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the TailorPolicies of namespace %s: %w", namespace, err)
	}
	out := make([]ownership.Claimant, 0, len(list.Items))
	for i := range list.Items {
		if c, ok := claimant(&list.Items[i]); ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// chains reads the controller chain of each pod: the pod's controller and,
// for a ReplicaSet, the ReplicaSet's, from the cache of ReplicaSets'
// metadata, once per ReplicaSet.
func (r *Reconciler) chains(ctx context.Context, pods []*corev1.Pod) (map[types.UID]ownership.Chain, error) {
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
func (r *Reconciler) vpas(ctx context.Context, namespace string) ([]ownership.VPA, error) {
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

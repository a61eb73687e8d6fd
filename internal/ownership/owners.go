package ownership

import (
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Workload names an object of a namespace that owns pods, or that a
// HorizontalPodAutoscaler or VerticalPodAutoscaler points at: its API
// group (not its version: a Deployment of apps/v1 and of apps/v1beta2 is
// one object), kind and name.
type Workload struct {
	Group, Kind, Name string
}

// WorkloadOf is the workload an apiVersion, kind and name (an owner
// reference, a targetRef, a scaleTargetRef) designate.
func WorkloadOf(apiVersion, kind, name string) Workload {
	group := apiVersion
	if gv, err := schema.ParseGroupVersion(apiVersion); err == nil {
		group = gv.Group
	}
	return Workload{Group: group, Kind: kind, Name: name}
}

func (w Workload) String() string { return w.Kind + " " + w.Name }

// replicaSet is the one link of a pod's controller chain whose owner is
// looked up: a Deployment (or another controller, an Argo Rollout) owns its
// pods through ReplicaSets. The controller reads a ReplicaSet's owner
// references from a cache of ReplicaSets' metadata.
var replicaSet = Workload{Group: "apps", Kind: "ReplicaSet"}

// IsReplicaSet reports whether w is a ReplicaSet, whose owner is looked up.
func (w Workload) IsReplicaSet() bool {
	return w.Group == replicaSet.Group && w.Kind == replicaSet.Kind
}

// Chain is a pod's controller chain, nearest first: the pod's controller
// (its ownerReference with controller: true), then that one's, as far as
// they are known. A Deployment's pod has [ReplicaSet web-5d9c, Deployment
// web]; a StatefulSet's, DaemonSet's or Job's pod has one link; a bare pod
// none. A CronJob's Job is not followed to its CronJob (that would cache
// every Job's metadata, and a CronJob has no selector a policy could use).
type Chain []Workload

// ControllerChain builds a pod's chain from its owner references; owners
// gives a ReplicaSet's owner references by name, and false when the
// ReplicaSet is not known (not in the cache yet, or deleted: the chain
// then ends at it).
func ControllerChain(refs []metav1.OwnerReference, owners func(name string) ([]metav1.OwnerReference, bool)) Chain {
	var out Chain
	for range 2 {
		ref := metav1.GetControllerOfNoCopy(&metav1.ObjectMeta{OwnerReferences: refs})
		if ref == nil {
			return out
		}
		w := WorkloadOf(ref.APIVersion, ref.Kind, ref.Name)
		out = append(out, w)
		if !w.IsReplicaSet() || owners == nil {
			return out
		}
		var ok bool
		if refs, ok = owners(w.Name); !ok {
			return out
		}
	}
	return out
}

// Reaches reports whether w is in the chain.
func (c Chain) Reaches(w Workload) bool {
	for _, o := range c {
		if o == w {
			return true
		}
	}
	return false
}

// Claimant is a TailorPolicy of a pod's namespace, as far as deciding which
// policy sizes the pod needs it.
type Claimant struct {
	Name    string
	Created time.Time
	// Target is the workload a targetRef policy names; nil for a selector
	// policy.
	Target *Workload
	// Selector is a selector policy's own selector; unused for a targetRef
	// policy, whose pods are those whose chain reaches its target.
	Selector labels.Selector
	// RecommendOnly: the policy is in mode Off. It sizes nothing, so it
	// competes with no one for a pod: it recommends for every pod it
	// claims, and the policy that sizes the pod is chosen among the others.
	RecommendOnly bool
}

// Claims reports whether c claims a pod with these labels and chain: a
// targetRef policy the pods its target controls, directly or through a
// ReplicaSet; a selector policy the pods its selector matches.
func (c Claimant) Claims(podLabels labels.Set, chain Chain) bool {
	if c.Target != nil {
		return chain.Reaches(*c.Target)
	}
	return c.Selector != nil && c.Selector.Matches(podLabels)
}

// ClaimedBy is the policy that sizes a pod several policies claim, and ok
// false when none does. One wins, the same whichever asks:
//
//  1. a targetRef policy over a selector policy: it names the workload, a
//     selector may match more than its author meant;
//  2. then the oldest (creationTimestamp): a policy added later does not
//     take over pods another already sizes;
//  3. then the first by name.
//
// The others leave the pod alone and say so (a Conflict condition naming
// the winner), so the pod is not resized back and forth between two
// policies' bounds.
func ClaimedBy(podLabels labels.Set, chain Chain, policies []Claimant) (Claimant, bool) {
	var winner Claimant
	found := false
	for _, c := range policies {
		if c.RecommendOnly || !c.Claims(podLabels, chain) {
			continue
		}
		if !found || beats(c, winner) {
			winner, found = c, true
		}
	}
	return winner, found
}

func beats(a, b Claimant) bool {
	if (a.Target != nil) != (b.Target != nil) {
		return a.Target != nil
	}
	if !a.Created.Equal(b.Created) {
		return a.Created.Before(b.Created)
	}
	return a.Name < b.Name
}

// UpdateModeOff is the VerticalPodAutoscaler mode in which it only
// recommends; in any other (Auto, Recreate, Initial, InPlaceOrRecreate,
// and unset, which VPA defaults to Recreate) it sets pods' resources.
const UpdateModeOff = "Off"

// VPA is a VerticalPodAutoscaler of the namespace: its name, the workload
// its spec.targetRef names and its spec.updatePolicy.updateMode ("" when
// unset).
type VPA struct {
	Name   string
	Target Workload
	Mode   string
}

// Acts reports whether the VPA sets the resources of its workload's pods.
func (v VPA) Acts() bool { return v.Mode != UpdateModeOff }

func (v VPA) String() string {
	mode := v.Mode
	if mode == "" {
		mode = "unset (Recreate)"
	}
	return fmt.Sprintf("VerticalPodAutoscaler %s (updateMode %s) on %s", v.Name, mode, v.Target)
}

// VPAOn is the VerticalPodAutoscaler, of those that act, whose target is in
// the chain (the first by name when several are), and ok false when none
// is: tailor then leaves the pod to it.
func VPAOn(chain Chain, vpas []VPA) (VPA, bool) {
	var out []VPA
	for _, v := range vpas {
		if v.Acts() && chain.Reaches(v.Target) {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return VPA{}, false
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out[0], true
}

// Workloads is every workload in the chains, and extra (a targetRef
// policy's target, which may have no pod yet), once each, sorted: what a
// HorizontalPodAutoscaler's scaleTargetRef is matched against.
func Workloads(chains []Chain, extra ...Workload) []Workload {
	seen := map[Workload]bool{}
	var out []Workload
	add := func(w Workload) {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	for _, w := range extra {
		add(w)
	}
	for _, c := range chains {
		for _, w := range c {
			add(w)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return strings.Join([]string{out[i].Group, out[i].Kind, out[i].Name}, "/") < strings.Join([]string{out[j].Group, out[j].Kind, out[j].Name}, "/")
	})
	return out
}

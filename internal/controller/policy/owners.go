package policy

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/internal/controller/policy/gather"
	"github.com/tailorhq/tailor/internal/ownership"
)

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

// owners judges which of pods, selected by the policy's selector, are the
// policy's, from what gather read of them (ownPods).
func owners(sel gather.Selection, pods []*corev1.Pod) owned {
	if !sel.Claims {
		return owned{pods: pods}
	}
	return ownPods(sel.Self, pods, sel.Chains, sel.Others, sel.VPAs)
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

// others names the other policies and the VerticalPodAutoscaler that size
// some of the policy's pods, "" when none does: the events that say so are
// sent when it changes.
func (o owned) others() string {
	var keys []string
	if o.vpa.Name != "" {
		keys = append(keys, "vpa:"+o.vpa.String())
	}
	for n := range o.lost {
		keys = append(keys, "policy:"+n)
	}
	if o.target != "" {
		keys = append(keys, "target:"+o.target)
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

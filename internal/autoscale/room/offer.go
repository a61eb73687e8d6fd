package room

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	schedhelper "k8s.io/component-helpers/scheduling/corev1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/limits"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/resize"
)

// Asked is a standing ask for room, as the donor's sync reads it.
type Asked struct {
	// For is the pod the room is made for, and Priority its priority.
	For      types.NamespacedName
	Priority int32
	// Amount is what was asked, by resource: only these resources'
	// windows are cut short.
	Amount corev1.ResourceList
}

// Cuts reports whether an ask lets pod p's stabilization window be cut
// short: it stands for a pod of strictly higher priority. The donor's own
// sync judges this again, whatever the asker judged.
func (a Asked) Cuts(p *corev1.Pod) bool {
	return a.Priority > schedhelper.PodPriority(p)
}

// Cut is targets with the early targets (advise.Advice.Early) of the
// resources asked for given in their place: the lowering the stabilization
// window alone holds back, for those resources only. A target already set
// (a raise, a lowering due) stays. cut says whether any early target was
// given.
func Cut(targets, early map[string]podchange.Target, asked corev1.ResourceList) (out map[string]podchange.Target, cut bool) {
	if len(early) == 0 {
		return targets, false
	}
	out = make(map[string]podchange.Target, len(targets)+len(early))
	for name, t := range targets {
		out[name] = t
	}
	for name, e := range early {
		t := out[name]
		if _, ok := asked[corev1.ResourceCPU]; ok && t.CPU == nil && e.CPU != nil {
			t.CPU, cut = e.CPU, true
		}
		if _, ok := asked[corev1.ResourceMemory]; ok && t.Memory == nil && e.Memory != nil {
			t.Memory, t.MemoryLimit, cut = e.Memory, e.MemoryLimit, true
		}
		if t.CPU != nil || t.Memory != nil || t.MemoryLimit != nil {
			out[name] = t
		}
	}
	return out, cut
}

// everything is the resources an offer counts.
var everything = corev1.ResourceList{corev1.ResourceCPU: {}, corev1.ResourceMemory: {}}

// Offers are what each of policy's pods that on names could give now
// (OfferOf), their stabilization windows all cut short at once, judged
// together by the policy's change windows and lowering budgets (gate, as
// the policy's own sync judges them): a pod whose lowering a closed window
// or a spent budget would hold offers nothing and says which, since asked
// it would not give before the asker's patience ran out. Only a policy
// with windows or a budget pays for the judgement (one more pass over its
// pods' own decisions). The canary and maxConcurrentResizes are not judged
// here: the donor's own sync judges them when it lowers.
func Offers(policy fleet.PolicyInput, on func(*corev1.Pod) bool, key types.NamespacedName, gate limits.Gate) (map[types.UID]Offer, error) {
	out := map[types.UID]Offer{}
	for _, pin := range policy.Pods {
		if !on(pin.Pod) {
			continue
		}
		o, err := OfferOf(policy, pin, key)
		if err != nil {
			return nil, err
		}
		out[pin.Pod.UID] = o
	}
	if len(out) == 0 {
		return nil, nil
	}
	switch _, limited, err := limits.ConfigOf(policy.Spec); {
	case err != nil:
		return nil, err
	case !limited:
		return out, nil
	}
	cut := policy
	cut.Pods = make([]fleet.PodInput, len(policy.Pods))
	for i, pin := range policy.Pods {
		if _, offers := out[pin.Pod.UID]; offers {
			pin.Targets, _ = Cut(pin.Targets, pin.Early, everything)
		}
		cut.Pods[i] = pin
	}
	held, err := gate.Holds(cut)
	if err != nil {
		return nil, err
	}
	for uid, o := range out {
		if h, ok := held[uid]; ok && !o.Forbidden {
			out[uid] = Offer{Policy: key, Held: h.Reason}
		}
	}
	return out, nil
}

// OfferOf is what pin could give now, its stabilization window cut short:
// the pod's own decision (policy.Wish: its bounds, QoS class, working-set
// floor, step limit, minResizeInterval, the requests an HPA holds) on its
// early targets, planned as any resize is, and the requests the node would
// count after it taken from those it counts now. A pod whose policy never
// lowers offers nothing and says so; a pod in a resize gives nothing until
// it ends. The policy's change windows and budgets are Offers' to judge,
// over all its pods at once.
func OfferOf(policy fleet.PolicyInput, pin fleet.PodInput, key types.NamespacedName) (Offer, error) {
	out := Offer{Policy: key}
	if policy.Spec.Mode() == v1alpha1.UpdateModeOff {
		out.Forbidden = true
		return out, nil
	}
	if pin.InFlight || len(pin.Early) == 0 {
		return out, nil
	}
	pin.Targets, _ = Cut(pin.Targets, pin.Early, everything)
	d, err := policy.Wish(pin)
	if err != nil {
		return out, err
	}
	if d.Empty() {
		return out, nil
	}
	plan, err := resize.Plan(resize.Input{Pod: pin.Pod, Desired: d.Desired, Server: policy.Server, Rules: policy.Rules})
	if err != nil {
		return out, fmt.Errorf("planning the room pod %s/%s could give: %w", pin.Pod.Namespace, pin.Pod.Name, err)
	}
	if plan.NoChange || plan.Outcome == resize.Refused || plan.ByNamespaceRules() {
		return out, nil
	}
	// Until the kubelet applies the lowering, the node counts the higher
	// of the spec and what it admitted: once it has, the spec alone.
	before := resize.NodeRequests(pin.Pod)
	after := resourcehelper.PodRequests(plan.AfterPod(), resourcehelper.PodResourcesOptions{InPlacePodLevelResourcesVerticalScalingEnabled: true})
	for r := range everything {
		q := before[r].DeepCopy()
		q.Sub(after[r])
		if q.Sign() > 0 {
			if out.Surplus == nil {
				out.Surplus = corev1.ResourceList{}
			}
			out.Surplus[r] = q
		}
	}
	return out, nil
}

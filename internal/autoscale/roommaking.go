package autoscale

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	schedhelper "k8s.io/component-helpers/scheduling/corev1"

	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/limits"
	"github.com/tailorhq/tailor/internal/autoscale/room"
	"github.com/tailorhq/tailor/internal/podchange"
)

// RoomInput is what making room in place reads in a sync
// (internal/autoscale/room); the zero value makes none.
type RoomInput struct {
	// Policy is the policy's own key, which its pods' offers name.
	Policy types.NamespacedName
	// Asked are the standing asks for room for the policy's pods, by pod
	// UID: such a pod's lowering of what was asked may cut its
	// stabilization window short.
	Asked map[types.UID]room.Asked
	// Offers are what the pods tailor manages could give, as their
	// policies' last syncs said, by pod UID; a pod missing is one tailor
	// does not manage.
	Offers map[types.UID]room.Offer
	// Sought are the nodes where some pod is short of room, as the syncs
	// before said: only the pods on them say what they could give, since
	// an offer plans a pod's lowering a second time, a cost every waiting
	// pod of the fleet would otherwise pay every sync.
	Sought map[string]bool
	// Asking are, by the UID of a pod of the policy, the donors it asked
	// for room whose asks still stand.
	Asking map[types.UID][]types.NamespacedName
}

// RoomOutcome is what the sync did about room.
type RoomOutcome struct {
	// Offers are what the policy's pods on the nodes where room is sought
	// could give now (room.OfferOf), by pod UID, for the other policies'
	// syncs.
	Offers map[types.UID]room.Offer
	// Seek are the nodes where a pod of the policy is short of room, for
	// the syncs after this one: the pods on them are to say what they
	// could give.
	Seek []string
	// Asks are the pods short of room on their node, each with the room
	// asked of the pods beside it, or why none is.
	Asks []RoomAsk
	// Given are the lowerings sent now with the stabilization window cut
	// short, each for the ask that cut it.
	Given []RoomGiven
	// Made are the raises sent now for which room was asked.
	Made []RoomMade
}

// RoomAsk is a pod short of room, and what was asked for it.
type RoomAsk struct {
	Pod       *corev1.Pod
	Shortfall corev1.ResourceList
	room.Decision
}

// Text says what was asked for the pod, or why nothing could be: what its
// NodeFull hold or skip adds in events and status.
func (a RoomAsk) Text() string {
	if len(a.Asks) > 0 {
		return "room is asked of " + donors(a.Asks)
	}
	return a.Message
}

// RoomGiven is a pod lowered early to make room.
type RoomGiven struct {
	Pod *corev1.Pod
	room.Asked
}

// RoomMade is a raise sent after the pods named gave room.
type RoomMade struct {
	Pod    *corev1.Pod
	Donors []types.NamespacedName
}

// offers are what each of the policy's pods on a node where room is
// sought could give now, judged by its change windows and lowering budgets
// as its own sync judges them (room.Offers).
func (in SyncInput) offers(policy fleet.PolicyInput) (map[types.UID]room.Offer, error) {
	if len(in.Room.Sought) == 0 {
		return nil, nil
	}
	gate := limits.Gate{Lowered: in.Lowered, Namespace: in.Namespace, CountLowerings: in.CountLowerings}
	return room.Offers(policy, func(p *corev1.Pod) bool { return in.Room.Sought[p.Spec.NodeName] }, in.Room.Policy, gate)
}

// cutForAsks is policy with the targets of each pod asked for room by a
// pod of higher priority cut to its early ones, for the resources asked
// (room.Cut), and which pods that changed. Everything else of the pod's
// decision (bounds, floors, the gates) stays as it is.
func (in SyncInput) cutForAsks(policy fleet.PolicyInput) (fleet.PolicyInput, map[types.UID]room.Asked) {
	if len(in.Room.Asked) == 0 {
		return policy, nil
	}
	cut := map[types.UID]room.Asked{}
	pods := make([]fleet.PodInput, len(policy.Pods))
	for i, pin := range policy.Pods {
		if a, ok := in.Room.Asked[pin.Pod.UID]; ok && a.Cuts(pin.Pod) {
			var changed bool
			if pin.Targets, changed = room.Cut(pin.Targets, pin.Early, a.Amount); changed {
				cut[pin.Pod.UID] = a
			}
		}
		pods[i] = pin
	}
	policy.Pods = pods
	return policy, cut
}

// given are the resizes of d that lower a pod whose window was cut short.
func given(d fleet.PolicyDecision, cut map[types.UID]room.Asked) []RoomGiven {
	var out []RoomGiven
	for _, a := range d.Resizes {
		if asked, ok := cut[a.Pod.UID]; ok && lowersRequest(a.Decision, asked.Amount) {
			out = append(out, RoomGiven{Pod: a.Pod, Asked: asked})
		}
	}
	return out
}

// lowersRequest reports whether d lowers a request of one of the resources
// named.
func lowersRequest(d podchange.Decision, of corev1.ResourceList) bool {
	for _, c := range d.All() {
		if _, ok := of[c.Resource]; ok && c.RequestNow.Cmp(c.RequestBefore) < 0 {
			return true
		}
	}
	return false
}

// makeRoom asks, for each pod whose raise its node's room cut, room of the
// pods beside it (room.Decide); on a node where room was not sought yet,
// whose pods have said nothing of what they could give, it seeks it first
// (room.Seeking). It returns the asks, the nodes where room is sought, the
// raises sent for which room was asked, and d with, while room is sought
// or asked, a sync soon; the holds and skips are left as they are, and
// RoomAsk.Text says what was asked or why nothing could be.
func (in SyncInput) makeRoom(d fleet.PolicyDecision) ([]RoomAsk, []string, []RoomMade, fleet.PolicyDecision) {
	var asks []RoomAsk
	var seek []string
	for _, pin := range in.Pods {
		p := pin.Pod
		shortfall := shortfallOf(d.Decisions[p.Name].Short)
		node := in.Nodes[p.Spec.NodeName]
		if len(shortfall) == 0 || node == nil {
			continue
		}
		if !slices.Contains(seek, p.Spec.NodeName) {
			seek = append(seek, p.Spec.NodeName)
		}
		rd := room.Seek(p.Spec.NodeName)
		if in.Room.Sought[p.Spec.NodeName] {
			rd = room.Decide(room.Input{Pod: p, Shortfall: shortfall, Neighbours: in.neighbours(p, node.Pods)})
		}
		asks = append(asks, RoomAsk{Pod: p, Shortfall: shortfall, Decision: rd})
	}
	for _, a := range asks {
		if a.Awaits() {
			d.RetryAfter = fleet.Soonest(d.RetryAfter, room.Retry)
		}
	}
	var made []RoomMade
	for _, a := range d.Resizes {
		if from := in.Room.Asking[a.Pod.UID]; len(from) > 0 && a.Decision.Raises() {
			made = append(made, RoomMade{Pod: a.Pod, Donors: from})
		}
	}
	return asks, seek, made, d
}

// neighbours are the pods bound to p's node but p, terminal ones left out,
// each with its offer if tailor manages it.
func (in SyncInput) neighbours(p *corev1.Pod, onNode []*corev1.Pod) []room.Neighbour {
	var out []room.Neighbour
	for _, np := range onNode {
		if np.UID == p.UID && np.Namespace == p.Namespace && np.Name == p.Name {
			continue
		}
		if np.Status.Phase == corev1.PodSucceeded || np.Status.Phase == corev1.PodFailed {
			continue
		}
		n := room.Neighbour{Pod: np}
		if o, ok := in.Room.Offers[np.UID]; ok {
			n.Offer = &o
		}
		out = append(out, n)
	}
	return out
}

// shortfallOf is, by resource, what the raises the node's room cut wanted
// beyond what they got.
func shortfallOf(short []podchange.Shortfall) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, s := range short {
		q := s.Wanted.DeepCopy()
		q.Sub(s.Got)
		if q.Sign() <= 0 {
			continue
		}
		sum := out[s.Resource]
		sum.Add(q)
		out[s.Resource] = sum
	}
	return out
}

// donors names the pods asked and what each is asked for.
func donors(asks []room.Ask) string {
	parts := make([]string, 0, len(asks))
	for _, a := range asks {
		parts = append(parts, fmt.Sprintf("%s/%s (priority %d: %s)", a.Donor.Namespace, a.Donor.Name, schedhelper.PodPriority(a.Donor), room.Text(a.Amount)))
	}
	return strings.Join(parts, ", ")
}

// RecreateWaitRoom is why a pod short of room is not recreated yet: room
// is asked for it in place (room.Patience).
const RecreateWaitRoom = "RoomAsked"

// asking are the pods room is sought or asked for, by UID, with what was
// asked.
func asking(asks []RoomAsk) map[types.UID]string {
	out := map[types.UID]string{}
	for _, a := range asks {
		if a.Awaits() {
			out[a.Pod.UID] = a.Text()
		}
	}
	return out
}

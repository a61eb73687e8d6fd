package room

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	schedhelper "k8s.io/component-helpers/scheduling/corev1"

	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/limits"
)

// Retry is how soon a pod that asked for room looks again: its donors'
// policies sync first, then its raise finds the room they left.
const Retry = 5 * time.Second

// Patience is the least a pod asking for room waits for it before it may
// be recreated elsewhere (InPlaceOrRecreate), whatever its recreateAfter:
// the donors' policies sync within seconds, and one held longer by its own
// gates (a closed change window, a spent budget, a canary) would not give
// in time. It counts from when the raise first found no room.
const Patience = time.Minute

// Reason says why a pod beside the one short of room gives none, or why no
// room is asked at all.
type Reason string

const (
	// HigherPriority and EqualPriority: room is only taken from pods of
	// strictly lower priority.
	HigherPriority Reason = "HigherPriority"
	EqualPriority  Reason = "EqualPriority"
	// NotManaged: no policy of tailor's sizes the pod.
	NotManaged Reason = "NotManaged"
	// LoweringForbidden: the pod's policy never lowers it (updateMode Off).
	LoweringForbidden Reason = "LoweringForbidden"
	// WindowClosed: the pod's policy lowers only in change windows
	// (behavior.scaleDown.windows) and none is open: what it could give
	// would not come before one opens.
	WindowClosed Reason = "WindowClosed"
	// BudgetSpent: the pod's policy's lowering budget, or its namespace's
	// (behavior.scaleDown.budget), has no room for lowering it now.
	BudgetSpent Reason = "BudgetSpent"
	// NothingToGive: the pod's own decision lowers none of what is short.
	NothingToGive Reason = "NothingToGive"
	// NotNeeded: the pods before it cover the shortfall.
	NotNeeded Reason = "NotNeeded"
	// NotEnough: what every pod that may give could give together does not
	// cover the shortfall, so nothing is asked.
	NotEnough Reason = "NotEnough"
	// Seeking: room was not sought on the node before, so the pods on it
	// have not said what they could give; their policies' next syncs say,
	// and the pod short of room asks then.
	Seeking Reason = "Seeking"
)

// Offer is what one pod tailor manages could give now, as its own
// policy's sync said (OfferOf).
type Offer struct {
	// Policy is the policy that sizes the pod, whose sync lowers it.
	Policy types.NamespacedName
	// Forbidden: the policy never lowers its pods.
	Forbidden bool
	// Held is why the policy's change windows or lowering budgets hold
	// the pod's lowering now (limits.Gate); "" when they do not.
	Held fleet.HoldReason
	// Surplus is, by resource, how far the pod's requests would go down if
	// its stabilization window ended now; none when Forbidden or Held.
	Surplus corev1.ResourceList
}

// Neighbour is a pod on the node of the pod short of room.
type Neighbour struct {
	Pod *corev1.Pod
	// Offer is nil for a pod tailor does not manage.
	Offer *Offer
}

// Input is a raise that does not fit, and the pods beside it.
type Input struct {
	Pod *corev1.Pod
	// Shortfall is, by resource, what the raise wants beyond the node's
	// room.
	Shortfall corev1.ResourceList
	// Neighbours are the other pods bound to the node.
	Neighbours []Neighbour
}

// Ask asks one pod to give room.
type Ask struct {
	Donor  *corev1.Pod
	Policy types.NamespacedName
	// Amount is what it is asked for, by resource: at most its surplus.
	Amount corev1.ResourceList
}

// Passed is a neighbour asked nothing, and why.
type Passed struct {
	Pod    *corev1.Pod
	Reason Reason
}

// Decision is the room asked for one raise, or why none is.
type Decision struct {
	// Asks are the donors, lowest priority first, then the one giving
	// most. Either they cover the whole shortfall or there are none.
	Asks []Ask
	// Passed are the neighbours asked nothing, each with its reason.
	Passed []Passed
	// Reason is NotEnough when nothing is asked for a shortfall, with
	// Message saying what could be given and why the rest could not; or
	// Seeking, when nothing is asked yet.
	Reason  Reason
	Message string
}

// Awaits reports whether the pod waits for room in place: room is asked
// for it, or sought on its node.
func (d Decision) Awaits() bool {
	return len(d.Asks) > 0 || d.Reason == Seeking
}

// Seek is the decision for a pod short of room on a node where room was
// not sought before: none is asked until the pods beside it say what they
// could give.
func Seek(node string) Decision {
	return Decision{Reason: Seeking, Message: "room is sought among the pods beside it on node " + node}
}

// Decide chooses the donors of room for in.Pod's raise. Only pods tailor
// manages, of strictly lower priority, whose policy may lower them and that
// would give some of what is short are asked; lowest priority first, then
// the one covering most of the shortfall. They are asked only when together
// they cover all of it: room made in part would lower them and still leave
// the raise waiting.
func Decide(in Input) Decision {
	short := shortOf(in.Shortfall)
	if len(short) == 0 {
		return Decision{}
	}
	var out Decision
	type donor struct {
		Neighbour
		share float64
	}
	var donors []donor
	prio := schedhelper.PodPriority(in.Pod)
	for _, n := range in.Neighbours {
		if r := refusal(prio, n, short); r != "" {
			out.Passed = append(out.Passed, Passed{Pod: n.Pod, Reason: r})
			continue
		}
		donors = append(donors, donor{Neighbour: n, share: share(n.Offer.Surplus, short)})
	}
	sort.SliceStable(donors, func(i, j int) bool {
		a, b := donors[i], donors[j]
		if pa, pb := schedhelper.PodPriority(a.Pod), schedhelper.PodPriority(b.Pod); pa != pb {
			return pa < pb
		}
		if a.share != b.share {
			return a.share > b.share
		}
		return a.Pod.Namespace+"/"+a.Pod.Name < b.Pod.Namespace+"/"+b.Pod.Name
	})
	left := short.DeepCopy()
	for _, d := range donors {
		if covered(left) {
			out.Passed = append(out.Passed, Passed{Pod: d.Pod, Reason: NotNeeded})
			continue
		}
		amount := corev1.ResourceList{}
		for r, q := range left {
			take := d.Offer.Surplus[r].DeepCopy()
			if take.Cmp(q) > 0 {
				take = q.DeepCopy()
			}
			if take.Sign() <= 0 {
				continue
			}
			amount[r] = take
			q.Sub(take)
			left[r] = q
		}
		if len(amount) == 0 {
			// What it gives, those before it already gave.
			out.Passed = append(out.Passed, Passed{Pod: d.Pod, Reason: NotNeeded})
			continue
		}
		out.Asks = append(out.Asks, Ask{Donor: d.Pod, Policy: d.Offer.Policy, Amount: amount})
	}
	if !covered(left) {
		out.Message = notEnough(short, left, out.Passed)
		for _, a := range out.Asks {
			out.Passed = append(out.Passed, Passed{Pod: a.Donor, Reason: NotEnough})
		}
		out.Asks, out.Reason = nil, NotEnough
	}
	return out
}

// refusal is why n gives no room to a pod of priority prio short of short,
// "" when it may.
func refusal(prio int32, n Neighbour, short corev1.ResourceList) Reason {
	switch p := schedhelper.PodPriority(n.Pod); {
	case n.Offer == nil:
		return NotManaged
	case p > prio:
		return HigherPriority
	case p == prio:
		return EqualPriority
	case n.Offer.Forbidden:
		return LoweringForbidden
	case n.Offer.Held == limits.HoldOutsideWindow:
		return WindowClosed
	case n.Offer.Held != "":
		return BudgetSpent
	case share(n.Offer.Surplus, short) == 0:
		return NothingToGive
	}
	return ""
}

// shortOf is the shortfall's positive entries.
func shortOf(l corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for r, q := range l {
		if q.Sign() > 0 {
			out[r] = q.DeepCopy()
		}
	}
	return out
}

// share is how much of short surplus covers, summed over the resources
// short (each at most 1).
func share(surplus, short corev1.ResourceList) float64 {
	var sum float64
	for r, q := range short {
		s := surplus[r]
		if s.Sign() <= 0 {
			continue
		}
		sum += min(s.AsApproximateFloat64()/q.AsApproximateFloat64(), 1)
	}
	return sum
}

func covered(left corev1.ResourceList) bool {
	for _, q := range left {
		if q.Sign() > 0 {
			return false
		}
	}
	return true
}

// notEnough says what is short, what the donors could not cover, and how
// many neighbours gave nothing for which reason.
func notEnough(short, left corev1.ResourceList, passed []Passed) string {
	counts := map[Reason]int{}
	for _, p := range passed {
		counts[p.Reason]++
	}
	var why []string
	for _, r := range []Reason{HigherPriority, EqualPriority, NotManaged, LoweringForbidden, WindowClosed, BudgetSpent, NothingToGive} {
		if n := counts[r]; n > 0 {
			why = append(why, fmt.Sprintf("%d %s", n, r))
		}
	}
	msg := fmt.Sprintf("no room could be made: the pods of lower priority tailor may lower could not give %s of the %s short", Text(left), Text(short))
	if len(why) > 0 {
		msg += " (other pods on the node: " + strings.Join(why, ", ") + ")"
	}
	return msg
}

// Text is a resource list as events and messages say it, in name order:
// "cpu 200m, memory 64Mi".
func Text(l corev1.ResourceList) string {
	names := make([]string, 0, len(l))
	for r := range l {
		names = append(names, string(r))
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		q := l[corev1.ResourceName(n)]
		if q.Sign() <= 0 {
			q = resource.Quantity{}
		}
		parts = append(parts, n+" "+q.String())
	}
	return strings.Join(parts, ", ")
}

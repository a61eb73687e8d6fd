package store

import (
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	schedhelper "k8s.io/component-helpers/scheduling/corev1"

	"github.com/tailorhq/tailor/internal/autoscale/room"
)

// RoomBoard is where the policies' syncs meet to make room in place on a
// full node (internal/autoscale/room): each sync posts what its pods could
// give, and the room its pods short of it ask of other pods; a donor's own
// policy reads the asks standing for its pods at its next sync. Everything
// on it expires: it is derived state, which the next syncs post again after
// a restart, so nothing of it is checkpointed. The zero value is empty and
// ready.
type RoomBoard struct {
	mu     sync.Mutex
	offers map[types.UID]postedOffer
	// asks are by donor, then by the pod asking.
	asks map[types.UID]map[types.UID]postedAsk
	// sought are the nodes where room is sought, each until when.
	sought map[string]time.Time
}

type postedOffer struct {
	room.Offer
	until time.Time
}

type postedAsk struct {
	room.Asked
	donor types.NamespacedName
	until time.Time
}

// PostOffers posts what each pod could give (by UID), standing for ttl.
func (b *RoomBoard) PostOffers(offers map[types.UID]room.Offer, now time.Time, ttl time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.prune(now)
	if b.offers == nil {
		b.offers = map[types.UID]postedOffer{}
	}
	for uid, o := range offers {
		b.offers[uid] = postedOffer{Offer: o, until: now.Add(ttl)}
	}
}

// Seek posts the nodes where room is sought, standing for ttl, and
// returns those not sought before: the policies of their pods are to say
// what they could give.
func (b *RoomBoard) Seek(nodes []string, now time.Time, ttl time.Duration) []string {
	if len(nodes) == 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.prune(now)
	if b.sought == nil {
		b.sought = map[string]time.Time{}
	}
	var fresh []string
	for _, n := range nodes {
		if _, ok := b.sought[n]; !ok {
			fresh = append(fresh, n)
		}
		b.sought[n] = now.Add(ttl)
	}
	return fresh
}

// Sought are the nodes where room is sought now.
func (b *RoomBoard) Sought(now time.Time) map[string]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]bool, len(b.sought))
	for n, until := range b.sought {
		if now.Before(until) {
			out[n] = true
		}
	}
	return out
}

// Offers are the standing offers of pods, by UID; a pod without one is
// none tailor manages (or whose policy has not synced since the start).
func (b *RoomBoard) Offers(pods []*corev1.Pod, now time.Time) map[types.UID]room.Offer {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[types.UID]room.Offer{}
	for _, p := range pods {
		if o, ok := b.offers[p.UID]; ok && now.Before(o.until) {
			out[p.UID] = o.Offer
		}
	}
	return out
}

// PostAsks posts the asks of the pod needy (replacing its earlier ones),
// standing for ttl, and returns the policies of the donors, to be synced.
func (b *RoomBoard) PostAsks(needy *corev1.Pod, asks []room.Ask, now time.Time, ttl time.Duration) []types.NamespacedName {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.prune(now)
	b.withdraw(needy.UID)
	if b.asks == nil {
		b.asks = map[types.UID]map[types.UID]postedAsk{}
	}
	seen := map[types.NamespacedName]bool{}
	var policies []types.NamespacedName
	for _, a := range asks {
		if b.asks[a.Donor.UID] == nil {
			b.asks[a.Donor.UID] = map[types.UID]postedAsk{}
		}
		b.asks[a.Donor.UID][needy.UID] = postedAsk{
			Asked: room.Asked{For: types.NamespacedName{Namespace: needy.Namespace, Name: needy.Name}, Priority: schedhelper.PodPriority(needy), Amount: a.Amount},
			donor: types.NamespacedName{Namespace: a.Donor.Namespace, Name: a.Donor.Name}, until: now.Add(ttl),
		}
		if !seen[a.Policy] {
			seen[a.Policy] = true
			policies = append(policies, a.Policy)
		}
	}
	return policies
}

// Withdraw takes back the asks of the pods needy: their raise was sent,
// or they are short of room no longer.
func (b *RoomBoard) Withdraw(needy ...types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.withdraw(needy...)
}

// withdraw walks the asks standing once, not once per pod: every sync
// withdraws for each of its pods not asking, while asks are few.
func (b *RoomBoard) withdraw(needy ...types.UID) {
	if len(needy) == 0 || len(b.asks) == 0 {
		return
	}
	gone := make(map[types.UID]bool, len(needy))
	for _, uid := range needy {
		gone[uid] = true
	}
	for donor, byNeedy := range b.asks {
		for uid := range byNeedy {
			if gone[uid] {
				delete(byNeedy, uid)
			}
		}
		if len(byNeedy) == 0 {
			delete(b.asks, donor)
		}
	}
}

// AskedOf is the standing ask for each of pods that some pod asked room
// of, by UID: that of the asker of highest priority, for every resource
// any asker asked.
func (b *RoomBoard) AskedOf(pods []*corev1.Pod, now time.Time) map[types.UID]room.Asked {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[types.UID]room.Asked{}
	for _, p := range pods {
		var merged room.Asked
		for _, a := range b.asks[p.UID] {
			if !now.Before(a.until) {
				continue
			}
			amount := merged.Amount
			if merged.Amount == nil || a.Priority > merged.Priority ||
				(a.Priority == merged.Priority && a.For.String() < merged.For.String()) {
				merged = a.Asked
			}
			merged.Amount = union(amount, a.Amount)
		}
		if merged.Amount != nil {
			out[p.UID] = merged
		}
	}
	return out
}

// Asking are, for each of pods that asked room of others, the donors
// whose asks stand, by UID, sorted.
func (b *RoomBoard) Asking(pods []*corev1.Pod, now time.Time) map[types.UID][]types.NamespacedName {
	b.mu.Lock()
	defer b.mu.Unlock()
	mine := map[types.UID]bool{}
	for _, p := range pods {
		mine[p.UID] = true
	}
	out := map[types.UID][]types.NamespacedName{}
	for _, byNeedy := range b.asks {
		for needy, a := range byNeedy {
			if mine[needy] && now.Before(a.until) {
				out[needy] = append(out[needy], a.donor)
			}
		}
	}
	for _, donors := range out {
		sort.Slice(donors, func(i, j int) bool { return donors[i].String() < donors[j].String() })
	}
	return out
}

// prune drops what has expired, so the board holds only what stands.
func (b *RoomBoard) prune(now time.Time) {
	for n, until := range b.sought {
		if !now.Before(until) {
			delete(b.sought, n)
		}
	}
	for uid, o := range b.offers {
		if !now.Before(o.until) {
			delete(b.offers, uid)
		}
	}
	for donor, byNeedy := range b.asks {
		for needy, a := range byNeedy {
			if !now.Before(a.until) {
				delete(byNeedy, needy)
			}
		}
		if len(byNeedy) == 0 {
			delete(b.asks, donor)
		}
	}
}

// union is every resource of a and b, with a's amount where both have one.
func union(a, b corev1.ResourceList) corev1.ResourceList {
	out := b.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for r, q := range a {
		out[r] = q.DeepCopy()
	}
	return out
}

package policy

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/resize"
)

// roomWakeBuffer bounds the policies waiting to be woken to give room; a
// wake that does not fit is dropped, and the sync period is the backstop.
const roomWakeBuffer = 256

// roomTTL is how long what a sync posts on the room board stands: two sync
// periods, so an offer or an ask outlives one late sync, never a stale
// state of the node for long.
func (r *Reconciler) roomTTL() time.Duration { return 2 * r.SyncPeriod }

// roomInput is what making room reads in the policy's sync: the asks
// standing for its pods, the nodes where room is sought, the offers of the
// pods on its pods' nodes, and the donors its own pods asked.
func (r *Reconciler) roomInput(policy *v1alpha1.TailorPolicy, in *syncInput, now time.Time) autoscale.RoomInput {
	var onNodes []*corev1.Pod
	for _, n := range in.decision.Nodes {
		if n != nil {
			onNodes = append(onNodes, n.Pods...)
		}
	}
	return autoscale.RoomInput{
		Policy: client.ObjectKeyFromObject(policy),
		Asked:  in.roomAsked,
		Sought: r.room.Sought(now),
		Offers: r.room.Offers(onNodes, now),
		Asking: r.room.Asking(in.pods, now),
	}
}

// postRoom posts what the sync decided about room: its pods' offers, the
// nodes where room is sought (the policies of the pods on a node newly
// sought woken to say what they could give), the asks of those short of
// room (their donors' policies woken to give it), and takes back the asks
// of its other pods: a raise the room was made for, or one no longer short
// of room, asks nothing of anyone.
func (r *Reconciler) postRoom(key types.NamespacedName, d autoscale.SyncDecision, in *syncInput, now time.Time) {
	r.room.PostOffers(d.Room.Offers, now, r.roomTTL())
	for _, name := range r.room.Seek(d.Room.Seek, now, r.roomTTL()) {
		r.wakeOnNode(key, in.decision.Nodes[name])
	}
	noRoom := map[types.UID]bool{}
	for _, a := range d.Room.Asks {
		if len(a.Asks) == 0 && !a.Awaits() {
			noRoom[a.Pod.UID] = true
		}
	}
	for _, p := range in.pods {
		in.state.Pod(p).NoRoomMade = noRoom[p.UID]
	}
	asking := map[types.UID]bool{}
	for _, a := range d.Room.Asks {
		if len(a.Asks) == 0 {
			continue
		}
		asking[a.Pod.UID] = true
		for _, key := range r.room.PostAsks(a.Pod, a.Asks, now, r.roomTTL()) {
			r.wakeForRoom(key)
		}
	}
	var done []types.UID
	for _, p := range in.pods {
		if !asking[p.UID] {
			done = append(done, p.UID)
		}
	}
	r.room.Withdraw(done...)
}

// wakeOnNode brings the policies of the pods on node, but self, to sync
// now.
func (r *Reconciler) wakeOnNode(self types.NamespacedName, node *resize.NodeState) {
	if node == nil {
		return
	}
	woken := map[types.NamespacedName]bool{self: true}
	for _, p := range node.Pods {
		for _, key := range r.store.Selecting(p.Namespace, labels.Set(p.Labels)) {
			if !woken[key] {
				woken[key] = true
				r.wakeForRoom(key)
			}
		}
	}
}

// wakeForRoom brings policy key to sync now, if a manager runs it.
func (r *Reconciler) wakeForRoom(key types.NamespacedName) {
	if r.roomWake == nil {
		return
	}
	select {
	case r.roomWake <- event.GenericEvent{Object: &v1alpha1.TailorPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}:
	default:
	}
}

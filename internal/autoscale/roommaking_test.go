package autoscale

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/room"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
)

// roomPod is a running pod of priority prio on n1 requesting cpu.
func roomPod(name string, prio int32, cpu string) *corev1.Pod {
	return builder.Pod(name).Namespace("ns").UID(name).Node("n1").Priority(prio).
		Container(builder.Container("app").Requests(cpu, "256Mi")).Running().Obj()
}

func lowOffer(cpu string) room.Offer {
	return room.Offer{Policy: types.NamespacedName{Namespace: "ns", Name: "low"}, Surplus: builder.List(cpu, "0")}
}

// The needy side: a raise its node's room cuts seeks room on the node
// (whose pods then say what they could give), then asks room of the pods
// of lower priority beside it that can give it, lowest first and then the
// largest; is requeued soon; and is not recreated while room is sought or
// asked, for room.Patience at least. Where none can give enough, nothing is
// asked, the hold says why, and the existing path (recreation, in
// InPlaceOrRecreate) runs.
func TestDecideSyncAsksForRoom(t *testing.T) {
	lows := []*corev1.Pod{roomPod("lo1", 10, "1500m"), roomPod("lo2", 10, "1500m")}
	lowOffers := map[types.UID]room.Offer{"lo1": lowOffer("1"), "lo2": lowOffer("1200m")}
	cases := map[string]struct {
		neighbours []*corev1.Pod
		offers     map[types.UID]room.Offer
		// unsought: room was not sought on the node before this sync.
		unsought bool
		// shortFor is how long the raise has found no room.
		shortFor time.Duration
		wantAsks []string
		wantHeld string
		// wantRecreate is the recreation's wait reason: RoomAsked while
		// room is asked, "" for the existing path's own wait.
		wantRecreate string
	}{
		"room not sought on the node before: sought, and the pod waits": {
			neighbours: lows, unsought: true,
			wantHeld:     "room is sought among the pods beside it on node n1",
			wantRecreate: RecreateWaitRoom,
		},
		"two idle lower-priority pods give room": {
			neighbours: lows, offers: lowOffers,
			wantAsks:     []string{"lo2 cpu 1200m", "lo1 cpu 800m"},
			wantHeld:     "room is asked of ns/lo2 (priority 10: cpu 1200m), ns/lo1 (priority 10: cpu 800m)",
			wantRecreate: RecreateWaitRoom,
		},
		"room asked past the patience: the existing path goes on": {
			neighbours: lows, offers: lowOffers, shortFor: room.Patience,
			wantAsks:     []string{"lo2 cpu 1200m", "lo1 cpu 800m"},
			wantHeld:     "room is asked of",
			wantRecreate: "",
		},
		"only higher-priority neighbours: nothing taken, recreated as before": {
			neighbours: []*corev1.Pod{roomPod("hi1", 2000, "1500m"), roomPod("hi2", 2000, "1500m")},
			offers:     map[types.UID]room.Offer{"hi1": lowOffer("1"), "hi2": lowOffer("1200m")},
			wantHeld:   "no room could be made: the pods of lower priority tailor may lower could not give cpu 2 of the cpu 2 short (other pods on the node: 2 HigherPriority)",
		},
		"equal priority never gives room": {
			neighbours: []*corev1.Pod{roomPod("eq1", 1000, "1500m"), roomPod("eq2", 1000, "1500m")},
			offers:     map[types.UID]room.Offer{"eq1": lowOffer("1"), "eq2": lowOffer("1200m")},
			wantHeld:   "(other pods on the node: 2 EqualPriority)",
		},
		"not enough: nothing asked of those that could give some": {
			neighbours: []*corev1.Pod{roomPod("lo1", 10, "1500m"), roomPod("stranger", 0, "1500m")},
			offers:     map[types.UID]room.Offer{"lo1": lowOffer("1")},
			wantHeld:   "could not give cpu 1 of the cpu 2 short (other pods on the node: 1 NotManaged)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			needy := roomPod("needy", 1000, "1")
			needy.OwnerReferences = builder.Pod("x").Owner("ReplicaSet", "web-1", "rs-1").Obj().OwnerReferences
			onNode := append([]*corev1.Pod{needy}, tc.neighbours...)
			in := SyncInput{
				PolicyInput: fleet.PolicyInput{
					Spec: spec(func(s *v1alpha1.TailorPolicySpec) {
						s.UpdatePolicy = &v1alpha1.UpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlaceOrRecreate}
					}),
					Pods:   []fleet.PodInput{{Pod: needy, Targets: map[string]podchange.Target{"app": {CPU: q("3")}}, RaiseSince: now}},
					Nodes:  map[string]*resize.NodeState{"n1": nodeState("4", "8Gi", onNode...)},
					Server: v137, Now: now,
				},
				Room: RoomInput{Offers: tc.offers, Sought: map[string]bool{"n1": !tc.unsought}},
				Recreation: RecreationState{RecreateAfter: 30 * time.Second,
					ShortSince: map[types.UID]time.Time{"needy": now.Add(-tc.shortFor)}},
			}
			d, wanted, err := DecideSync(in)
			if err == nil && wanted != nil {
				d, err = wanted.Decide(nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			var asks []string
			for _, a := range d.Room.Asks {
				for _, ask := range a.Asks {
					asks = append(asks, ask.Donor.Name+" "+room.Text(ask.Amount))
				}
			}
			if diff := cmp.Diff(tc.wantAsks, asks); diff != "" {
				t.Errorf("asks (-want,+got):\n%s", diff)
			}
			// The raise has no room at all: a NodeFull skip, and the
			// room asked, or why none could be.
			var skipped int
			for _, s := range d.Decisions["needy"].Skips {
				if s.Reason == podchange.SkipNoRoom {
					skipped++
				}
			}
			if skipped != 1 || len(d.Room.Asks) != 1 || !strings.Contains(d.Room.Asks[0].Text(), tc.wantHeld) {
				t.Errorf("%d NodeFull skips and room asks %+v, want one skip and the room saying %q", skipped, d.Room.Asks, tc.wantHeld)
			}
			if diff := cmp.Diff([]string{"n1"}, d.Room.Seek); diff != "" {
				t.Errorf("nodes where room is sought (-want,+got):\n%s", diff)
			}
			if awaits, want := d.Room.Asks[0].Awaits(), len(tc.wantAsks) > 0 || tc.unsought; awaits != want {
				t.Errorf("awaits room: %v, want %v", awaits, want)
			}
			if awaits := d.Room.Asks[0].Awaits(); awaits && (d.RetryAfter == 0 || d.RetryAfter > room.Retry) {
				t.Errorf("retry after %s while room is sought or asked, want at most %s", d.RetryAfter, room.Retry)
			}
			// The existing path's step is whatever it decides (a wait, a
			// record): only room asked and still awaited says RoomAsked.
			if len(d.Recreate) != 1 || (d.Recreate[0].Reason == RecreateWaitRoom) != (tc.wantRecreate == RecreateWaitRoom) {
				t.Errorf("recreation steps %+v, want one, waiting for room: %v", d.Recreate, tc.wantRecreate == RecreateWaitRoom)
			}
		})
	}
}

// The donor side: a standing ask from a pod of higher priority cuts the
// donor's stabilization window short for what was asked, in its own sync;
// its decision's other rules and gates still hold.
func TestDecideSyncGivesRoom(t *testing.T) {
	early := map[string]podchange.Target{"app": {CPU: q("300m"), Memory: q("128Mi")}}
	ask := func(prio int32, cpu, memory string) map[types.UID]room.Asked {
		amount := corev1.ResourceList{}
		for r, q := range builder.List(cpu, memory) {
			if !q.IsZero() {
				amount[r] = q
			}
		}
		return map[types.UID]room.Asked{"lo": {For: types.NamespacedName{Namespace: "ns", Name: "needy"}, Priority: prio, Amount: amount}}
	}
	cases := map[string]struct {
		asked     map[types.UID]room.Asked
		inFlight  bool
		wantSent  string
		wantGiven bool
	}{
		"asked by a pod of higher priority: lowered to its need now": {
			asked: ask(1000, "1", "0"), wantSent: "app.cpu=300m;", wantGiven: true,
		},
		"asked by a pod of equal priority: the window stands": {
			asked: ask(10, "1", "0"),
		},
		"not asked: the window stands": {},
		"asked for memory: only memory's window is cut": {
			asked: ask(1000, "0", "64Mi"), wantSent: "app.memory=128Mi;", wantGiven: true,
		},
		"maxConcurrentResizes still holds it": {
			asked: ask(1000, "1", "0"), inFlight: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			lo := roomPod("lo", 10, "1500m")
			busy := roomPod("busy", 10, "100m")
			in := SyncInput{
				PolicyInput: fleet.PolicyInput{
					Spec: spec(),
					Pods: []fleet.PodInput{
						{Pod: lo, Early: early, WorkingSet: map[string]resource.Quantity{"app": *q("64Mi")}},
						{Pod: busy, InFlight: tc.inFlight},
					},
					Nodes:  map[string]*resize.NodeState{"n1": nodeState("4", "8Gi", lo, busy)},
					Server: v137, Now: now, MemoryFloorHeadroom: 0.1,
				},
				Room: RoomInput{Asked: tc.asked, Sought: map[string]bool{"n1": true}},
			}
			d, _, err := DecideSync(in)
			if err != nil {
				t.Fatal(err)
			}
			var sent string
			for _, a := range d.Resizes {
				for _, ch := range a.Decision.All() {
					sent += ch.Container + "." + string(ch.Resource) + "=" + ch.RequestNow.String() + ";"
				}
			}
			if sent != tc.wantSent {
				t.Errorf("sent %q, want %q", sent, tc.wantSent)
			}
			if got := len(d.Room.Given) > 0; got != tc.wantGiven {
				t.Errorf("room given: %v, want %v", got, tc.wantGiven)
			}
			// What it could give is offered whatever was asked; on a
			// node where no room is sought, nothing is.
			if o := d.Room.Offers["lo"]; o.Surplus.Cpu().String() != "1200m" {
				t.Errorf("lo offers %s, want cpu 1200m", room.Text(o.Surplus))
			}
			in.Room.Sought = map[string]bool{"n2": true}
			if d, _, err = DecideSync(in); err != nil {
				t.Fatal(err)
			}
			if len(d.Room.Offers) != 0 {
				t.Errorf("offers %v on a node where no room is sought", d.Room.Offers)
			}
		})
	}
}

// A raise sent after room was asked says who gave it.
func TestDecideSyncRoomMade(t *testing.T) {
	needy := roomPod("needy", 1000, "1")
	donors := []types.NamespacedName{{Namespace: "ns", Name: "lo"}}
	in := SyncInput{
		PolicyInput: fleet.PolicyInput{
			Spec:   spec(),
			Pods:   []fleet.PodInput{{Pod: needy, Targets: map[string]podchange.Target{"app": {CPU: q("2")}}}},
			Nodes:  map[string]*resize.NodeState{"n1": nodeState("4", "8Gi", needy)},
			Server: v137, Now: now,
		},
		Room: RoomInput{Asking: map[types.UID][]types.NamespacedName{"needy": donors}},
	}
	d, _, err := DecideSync(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []RoomMade{{Pod: needy, Donors: donors}}
	if diff := cmp.Diff(want, d.Room.Made); diff != "" {
		t.Errorf("room made (-want,+got):\n%s", diff)
	}
}

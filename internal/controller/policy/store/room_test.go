package store

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/internal/autoscale/room"
	"github.com/tailorhq/tailor/test/builder"
)

// TestRoomBoard: an ask stands for its ttl and no longer; a donor asked by
// two pods is asked for by the one of higher priority, for every resource
// either asked; a pod's new asks replace its old; a raise made withdraws
// them; and the asked donors' policies are named once each, to be woken.
func TestRoomBoard(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	const ttl = 20 * time.Second
	pod := func(name string, prio int32) *corev1.Pod {
		return builder.Pod(name).Namespace("ns").UID(name).Priority(prio).Obj()
	}
	lo, lo2, hi, top := pod("lo", 0), pod("lo2", 0), pod("hi", 100), pod("top", 1000)
	low := types.NamespacedName{Namespace: "ns", Name: "low"}
	cpu := corev1.ResourceList{corev1.ResourceCPU: builder.List("500m", "0")[corev1.ResourceCPU]}
	mem := corev1.ResourceList{corev1.ResourceMemory: builder.List("0", "1Gi")[corev1.ResourceMemory]}
	type asked struct {
		For      string
		Priority int32
		Amount   string
	}
	view := func(b *RoomBoard, now time.Time) map[types.UID]asked {
		out := map[types.UID]asked{}
		for uid, a := range b.AskedOf([]*corev1.Pod{lo, lo2}, now) {
			out[uid] = asked{For: a.For.Name, Priority: a.Priority, Amount: room.Text(a.Amount)}
		}
		return out
	}
	cases := map[string]struct {
		do   func(b *RoomBoard) []types.NamespacedName
		at   time.Duration
		want map[types.UID]asked
	}{
		"an ask stands for its ttl": {
			do: func(b *RoomBoard) []types.NamespacedName {
				return b.PostAsks(hi, []room.Ask{{Donor: lo, Policy: low, Amount: cpu}, {Donor: lo2, Policy: low, Amount: cpu}}, at, ttl)
			},
			at:   ttl - time.Second,
			want: map[types.UID]asked{"lo": {"hi", 100, "cpu 500m"}, "lo2": {"hi", 100, "cpu 500m"}},
		},
		"and no longer": {
			do: func(b *RoomBoard) []types.NamespacedName {
				return b.PostAsks(hi, []room.Ask{{Donor: lo, Policy: low, Amount: cpu}}, at, ttl)
			},
			at:   ttl,
			want: map[types.UID]asked{},
		},
		"the asker of highest priority, every resource asked": {
			do: func(b *RoomBoard) []types.NamespacedName {
				b.PostAsks(hi, []room.Ask{{Donor: lo, Policy: low, Amount: cpu}}, at, ttl)
				return b.PostAsks(top, []room.Ask{{Donor: lo, Policy: low, Amount: mem}}, at, ttl)
			},
			want: map[types.UID]asked{"lo": {"top", 1000, "cpu 500m, memory 1Gi"}},
		},
		"new asks replace a pod's old": {
			do: func(b *RoomBoard) []types.NamespacedName {
				b.PostAsks(hi, []room.Ask{{Donor: lo, Policy: low, Amount: cpu}}, at, ttl)
				return b.PostAsks(hi, []room.Ask{{Donor: lo2, Policy: low, Amount: cpu}}, at, ttl)
			},
			want: map[types.UID]asked{"lo2": {"hi", 100, "cpu 500m"}},
		},
		"a raise made withdraws them": {
			do: func(b *RoomBoard) []types.NamespacedName {
				policies := b.PostAsks(hi, []room.Ask{{Donor: lo, Policy: low, Amount: cpu}}, at, ttl)
				b.Withdraw(hi.UID)
				return policies
			},
			want: map[types.UID]asked{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var b RoomBoard
			policies := tc.do(&b)
			if diff := cmp.Diff([]types.NamespacedName{low}, policies); diff != "" {
				t.Errorf("policies to wake (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, view(&b, at.Add(tc.at))); diff != "" {
				t.Errorf("asked (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestRoomBoardOffers: an offer stands for its ttl; a pod with none is one
// no policy manages.
func TestRoomBoardOffers(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	var b RoomBoard
	managed, stranger := builder.Pod("m").UID("m").Obj(), builder.Pod("s").UID("s").Obj()
	b.PostOffers(map[types.UID]room.Offer{"m": {Surplus: builder.List("1", "0")}}, at, 20*time.Second)
	if got := b.Offers([]*corev1.Pod{managed, stranger}, at.Add(19*time.Second)); len(got) != 1 || room.Text(got["m"].Surplus) != "cpu 1, memory 0" {
		t.Errorf("offers %v, want m's alone", got)
	}
	if got := b.Offers([]*corev1.Pod{managed}, at.Add(20*time.Second)); len(got) != 0 {
		t.Errorf("offers %v after their ttl, want none", got)
	}
}

// TestRoomBoardSought: a node is sought for its ttl, each post renewing
// it; only a node not sought before is returned, its pods' policies to be
// woken.
func TestRoomBoardSought(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	const ttl = 20 * time.Second
	var b RoomBoard
	if got := b.Sought(at); len(got) != 0 {
		t.Fatalf("an empty board seeks room on %v", got)
	}
	if fresh := b.Seek([]string{"n1", "n2"}, at, ttl); !cmp.Equal(fresh, []string{"n1", "n2"}) {
		t.Errorf("first seek returned %v, want both nodes", fresh)
	}
	if fresh := b.Seek([]string{"n1", "n3"}, at.Add(15*time.Second), ttl); !cmp.Equal(fresh, []string{"n3"}) {
		t.Errorf("second seek returned %v, want only n3", fresh)
	}
	// n2's post has expired; n1's second post renewed it.
	if got, want := b.Sought(at.Add(ttl)), map[string]bool{"n1": true, "n3": true}; !cmp.Equal(got, want) {
		t.Errorf("sought after n2's ttl: %v, want %v", got, want)
	}
	if fresh := b.Seek([]string{"n2"}, at.Add(ttl), ttl); !cmp.Equal(fresh, []string{"n2"}) {
		t.Errorf("seek after expiry returned %v, want n2 sought anew", fresh)
	}
	if got := b.Sought(at.Add(ttl + 15*time.Second + ttl)); len(got) != 0 {
		t.Errorf("sought %v after every post expired", got)
	}
}

package resize

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/test/builder"
)

func TestHeadroom(t *testing.T) {
	me := builder.Pod("me").UID("me").Node("n").Container(builder.Container("app").Requests("500m", "256Mi"))
	cases := map[string]struct {
		pod  *corev1.Pod
		node *NodeState
		want Headroom
	}{
		"unknown node": {pod: me.Obj(), want: Headroom{}},
		"others counted at max(spec, allocated, actual); self and terminal pods skipped": {
			pod: me.Obj(),
			node: &NodeState{Allocatable: builder.List("4", "8Gi"), Pods: []*corev1.Pod{
				me.Obj(),
				builder.Pod("growing").UID("g").Node("n").Container(builder.Container("c").Requests("1", "1Gi")).
					ContainerStatus(corev1.ContainerStatus{Name: "c", AllocatedResources: builder.List("500m", "2Gi"), Resources: &corev1.ResourceRequirements{Requests: builder.List("500m", "2Gi")}}).Obj(),
				builder.Pod("failed").UID("f").Node("n").Phase(corev1.PodFailed).Container(builder.Container("c").Requests("3", "")).Obj(),
				builder.Pod("podlevel").UID("p").Node("n").PodRequests("1", "1Gi").Container(builder.Container("c").Requests("100m", "")).Obj(),
			}},
			want: Headroom{
				Known:             true,
				Allocatable:       builder.List("4", "8Gi"),
				RequestedByOthers: builder.List("2", "3Gi"),
				Free:              builder.List("2", "5Gi"),
				Needed:            builder.List("500m", "256Mi"),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := headroom(tc.pod, tc.node)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("headroom (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestRoom(t *testing.T) {
	me := builder.Pod("me").UID("me").Node("n").Container(builder.Container("app").Requests("500m", "256Mi"))
	other := builder.Pod("other").UID("o").Node("n").Container(builder.Container("c").Requests("1", "1Gi"))
	cases := map[string]struct {
		pod      *corev1.Pod
		node     *NodeState
		want     corev1.ResourceList
		wantKnow bool
	}{
		"unknown node": {pod: me.Obj()},
		"unbound pod":  {pod: builder.Pod("me").Container(builder.Container("app").Requests("500m", "256Mi")).Obj(), node: &NodeState{Allocatable: builder.List("4", "8Gi")}},
		"free less own requests": {
			pod:      me.Obj(),
			node:     &NodeState{Allocatable: builder.List("4", "8Gi"), Pods: []*corev1.Pod{me.Obj(), other.Obj()}},
			want:     builder.List("2500m", "6912Mi"),
			wantKnow: true,
		},
		"own pending resize counts at spec, so room is what is left beyond it": {
			pod: builder.Pod("me").UID("me").Node("n").Container(builder.Container("app").Requests("2", "256Mi")).
				ContainerStatus(corev1.ContainerStatus{Name: "app", AllocatedResources: builder.List("500m", "256Mi")}).Obj(),
			node:     &NodeState{Allocatable: builder.List("4", "8Gi"), Pods: []*corev1.Pod{other.Obj()}},
			want:     builder.List("1", "6912Mi"),
			wantKnow: true,
		},
		"overcommitted node gives zero, never negative": {
			pod:      me.Obj(),
			node:     &NodeState{Allocatable: builder.List("1", "1Gi"), Pods: []*corev1.Pod{other.Obj()}},
			want:     builder.List("0", "0"),
			wantKnow: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, known := Room(tc.pod, tc.node)
			if known != tc.wantKnow {
				t.Fatalf("Room known = %v, want %v", known, tc.wantKnow)
			}
			if !known {
				return
			}
			for _, r := range cpuAndMemory {
				w, g := tc.want[r], got[r]
				if w.Cmp(g) != 0 {
					t.Errorf("Room %s = %s, want %s", r, g.String(), w.String())
				}
			}
		})
	}
}

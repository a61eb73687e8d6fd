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

package placement

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
)

func TestPlaceable(t *testing.T) {
	me := func() *builder.PodWrapper {
		return builder.Pod("me").UID("me").Node("a").Priority(100).Container(builder.Container("app").Requests("500m", "256Mi"))
	}
	bigger := []v1alpha1.RecreatedContainer{{Name: "app", Requests: builder.List("2", "256Mi")}}
	node := func(name string) *builder.NodeWrapper {
		return builder.Node(name).Allocatable("2", "4Gi").Ready(corev1.ConditionTrue)
	}
	other := func(prio int32) *corev1.Pod {
		return builder.Pod("other").UID("o").Node("a").Priority(prio).Container(builder.Container("c").Requests("1", "1Gi")).Obj()
	}
	cases := map[string]struct {
		pod      *corev1.Pod
		nodes    []NodePods
		wantNode string
	}{
		"its own node, once the pod itself is gone": {
			pod:      me().Obj(),
			nodes:    []NodePods{{Node: node("a").Obj(), Pods: []*corev1.Pod{me().Obj()}}},
			wantNode: "a",
		},
		"a node full of equal-priority pods cannot take it": {
			pod:   me().Obj(),
			nodes: []NodePods{{Node: node("a").Obj(), Pods: []*corev1.Pod{me().Obj(), other(100)}}},
		},
		"lower-priority pods count as preempted": {
			pod:      me().Obj(),
			nodes:    []NodePods{{Node: node("a").Obj(), Pods: []*corev1.Pod{me().Obj(), other(0)}}},
			wantNode: "a",
		},
		"not when the pod may not preempt": {
			pod:   me().PreemptionPolicy(corev1.PreemptNever).Obj(),
			nodes: []NodePods{{Node: node("a").Obj(), Pods: []*corev1.Pod{other(0)}}},
		},
		"another node with room": {
			pod: me().Obj(),
			nodes: []NodePods{
				{Node: node("a").Obj(), Pods: []*corev1.Pod{me().Obj(), other(100)}},
				{Node: node("b").Obj()},
			},
			wantNode: "b",
		},
		"cordoned, not ready, tainted and unselected nodes are skipped": {
			pod: me().NodeSelector("pool", "big").Obj(),
			nodes: []NodePods{
				{Node: node("cordoned").Label("pool", "big").Unschedulable().Obj()},
				{Node: builder.Node("down").Label("pool", "big").Allocatable("2", "4Gi").Ready(corev1.ConditionFalse).Obj()},
				{Node: node("tainted").Label("pool", "big").Taint("gpu", "yes", corev1.TaintEffectNoSchedule).Obj()},
				{Node: node("small-pool").Obj()},
			},
		},
		"a tolerated taint is fine": {
			pod:      me().Toleration("gpu").Obj(),
			nodes:    []NodePods{{Node: node("tainted").Taint("gpu", "yes", corev1.TaintEffectNoSchedule).Obj()}},
			wantNode: "tainted",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := Placeable(tc.pod, bigger, tc.nodes)
			if got != tc.wantNode || ok != (tc.wantNode != "") {
				t.Errorf("Placeable = %q, %v; want %q", got, ok, tc.wantNode)
			}
		})
	}

	// A sidecar's raise counts as a container's does: it was left out, and
	// a pod was evicted whose replacement no node could take (found by the
	// fuzz of DecideSync).
	always := corev1.ContainerRestartPolicyAlways
	withSidecar := me().Obj()
	withSidecar.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always,
		Resources: corev1.ResourceRequirements{Requests: builder.List("100m", "64Mi")}}}
	proxy := []v1alpha1.RecreatedContainer{{Name: "proxy", Requests: builder.List("2", "64Mi")}}
	if got, ok := Placeable(withSidecar, proxy, []NodePods{{Node: node("a").Obj(), Pods: []*corev1.Pod{withSidecar}}}); ok {
		t.Errorf("a sidecar raised past every node: Placeable = %q, want none", got)
	}
}

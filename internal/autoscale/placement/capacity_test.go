package placement_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/newpods"
	"github.com/tailorhq/tailor/internal/autoscale/placement"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
)

func TestNewPodRoom(t *testing.T) {
	big := builder.Node("big").Allocatable("8", "16Gi").Ready(corev1.ConditionTrue).Obj()
	small := builder.Node("small").Allocatable("2", "32Gi").Ready(corev1.ConditionTrue).Label("pool", "small").Obj()
	cordoned := builder.Node("cordoned").Allocatable("64", "256Gi").Ready(corev1.ConditionTrue).Unschedulable().Obj()
	notReady := builder.Node("down").Allocatable("64", "256Gi").Ready(corev1.ConditionFalse).Obj()
	tainted := builder.Node("gpu").Allocatable("32", "64Gi").Ready(corev1.ConditionTrue).Taint("gpu", "", corev1.TaintEffectNoSchedule).Obj()
	busy := builder.Pod("busy").Node("big").Container(builder.Container("c").Requests("6", "4Gi")).Running().Obj()
	mine := builder.Pod("mine").Node("big").Owner("DaemonSet", "agent", "ds-1").Container(builder.Container("c").Requests("1", "1Gi")).Running().Obj()
	plain := &corev1.PodTemplateSpec{}
	pooled := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{NodeSelector: map[string]string{"pool": "small"}}}
	own := func(p *corev1.Pod) bool { return len(p.OwnerReferences) > 0 && p.OwnerReferences[0].UID == "ds-1" }
	nodes := []placement.NodePods{{Node: big, Pods: []*corev1.Pod{busy, mine}}, {Node: small}, {Node: cordoned}, {Node: notReady}, {Node: tainted}}
	cases := map[string]struct {
		in   placement.NewPodRoomInput
		want corev1.ResourceList
	}{
		"the largest allocatable of the nodes a pod may land on, per resource": {
			in:   placement.NewPodRoomInput{Template: plain, Nodes: nodes},
			want: builder.List("8", "32Gi"),
		},
		"the node selector narrows the nodes": {
			in:   placement.NewPodRoomInput{Template: pooled, Nodes: nodes},
			want: builder.List("2", "32Gi"),
		},
		"free room counts what is bound there": {
			in:   placement.NewPodRoomInput{Template: plain, Free: true, Nodes: nodes},
			want: builder.List("2", "32Gi"),
		},
		"a DaemonSet's pod must fit every node it runs on, beside all but its own pod": {
			in:   placement.NewPodRoomInput{Template: plain, DaemonSet: true, Own: own, Nodes: nodes},
			want: builder.List("2", "12Gi"),
		},
		"no node matches: nothing known": {
			in: placement.NewPodRoomInput{Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{NodeSelector: map[string]string{"pool": "none"}}}, Nodes: nodes},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := placement.NewPodRoom(tc.in)
			if diff := cmp.Diff(tc.want, got, quantityCmp); diff != "" {
				t.Errorf("NewPodRoom (-want,+got):\n%s", diff)
			}
		})
	}
}

// quantityCmp compares quantities by value, not by how they are written.
var quantityCmp = cmp.Comparer(func(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
})

// TestAdmitCutToNodeRoom: a recommendation or a boost above what any node
// could hold is cut to it, so the new pod is never created unschedulable.
func TestAdmitCutToNodeRoom(t *testing.T) {
	spec := &v1alpha1.TailorPolicySpec{}
	factor := int32(300)
	cases := map[string]struct {
		targets map[string]podchange.Target
		boost   *v1alpha1.StartupBoost
		room    corev1.ResourceList
		want    []string
	}{
		"a raise within the room is whole": {
			targets: map[string]podchange.Target{"app": target("2", "")},
			room:    builder.List("4", "8Gi"),
			want:    []string{"app 2/1Gi 4/2Gi"},
		},
		"a raise beyond the room is cut to it, the limit in ratio": {
			targets: map[string]podchange.Target{"app": target("6", "")},
			room:    builder.List("4", "8Gi"),
			want:    []string{"app 4/1Gi 8/2Gi"},
		},
		"a boost beyond the room is cut to it": {
			boost: &v1alpha1.StartupBoost{FactorPercent: &factor},
			room:  builder.List("1", "8Gi"),
			want:  []string{"app 1/1Gi 2/2Gi"},
		},
		"no room beyond the template: no raise": {
			targets: map[string]podchange.Target{"app": target("6", "")},
			room:    builder.List("500m", "8Gi"),
		},
		"unknown room: no cut": {
			targets: map[string]podchange.Target{"app": target("6", "")},
			want:    []string{"app 6/1Gi 12/2Gi"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tmpl := templateOf(ctr("app", rl("cpu", "500m", "memory", "1Gi"), rl("cpu", "1", "memory", "2Gi")))
			got, err := newpods.Admit(newpods.AdmitInput{Template: tmpl, Spec: spec, Targets: tc.targets, Boost: tc.boost, Room: tc.room,
				Server: resize.Version{Major: 1, Minor: 37}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, admittedText(got.Containers)); diff != "" {
				t.Errorf("admitted (-want,+got):\n%s\nsummary %q held %q", diff, got.Summary, got.Held)
			}
		})
	}
}

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func templateOf(cs ...corev1.Container) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: cs}}
}

func ctr(name string, req, lim corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
}

func target(cpu, memory string) podchange.Target {
	var t podchange.Target
	if cpu != "" {
		q := resource.MustParse(cpu)
		t.CPU = &q
	}
	if memory != "" {
		q := resource.MustParse(memory)
		t.Memory = &q
	}
	return t
}

// admittedText is each admitted container as "name req-cpu/req-mem lim-cpu/lim-mem".
func admittedText(cs []v1alpha1.AdmittedContainer) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s %s/%s %s/%s", c.Name, c.Requests.Cpu(), c.Requests.Memory(), c.Limits.Cpu(), c.Limits.Memory()))
	}
	return out
}

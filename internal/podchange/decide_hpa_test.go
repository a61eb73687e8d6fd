package podchange

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/ownership"
	"github.com/tailorhq/tailor/test/builder"
)

// With a request held for an HPA, the limit alone follows the
// recommendation, never below the request; without a limit to size, or
// under RequestsOnly, nothing changes.
func TestDecideHoldsRequestsForHPA(t *testing.T) {
	cpuHeld := ownership.Holds{All: map[corev1.ResourceName]bool{corev1.ResourceCPU: true}}
	burstable := builder.Pod("p").Container(builder.Container("app").Requests("100m", "64Mi").Limits("200m", "128Mi")).Obj()
	cases := map[string]struct {
		pod       *corev1.Pod
		spec      *v1alpha1.TailorPolicySpec
		target    Target
		want      map[string]string
		wantSkips []SkipReason
	}{
		"a raise moves only the limit, at the pod's ratio": {
			pod: burstable, spec: spec(), target: Target{CPU: q("300m")},
			want: map[string]string{"app": "req.cpu=100m,lim.cpu=600m"},
		},
		"a lowering stops the limit at the request": {
			pod: burstable, spec: spec(), target: Target{CPU: q("20m")},
			want: map[string]string{"app": "req.cpu=100m,lim.cpu=100m"},
		},
		"memory is sized as usual": {
			pod: burstable, spec: spec(), target: Target{CPU: q("300m"), Memory: q("96Mi")},
			want: map[string]string{"app": "req.cpu=100m,lim.cpu=600m,req.memory=96Mi,lim.memory=192Mi"},
		},
		"no limit: nothing to size": {
			pod:       builder.Pod("p").Container(builder.Container("app").Requests("100m", "64Mi")).Obj(),
			spec:      spec(),
			target:    Target{CPU: q("300m")},
			want:      map[string]string{},
			wantSkips: []SkipReason{SkipHPA},
		},
		"RequestsOnly: nothing tailor may change": {
			pod:       burstable,
			spec:      spec(containerPolicy(v1alpha1.ContainerPolicy{ContainerName: "*", ControlledValues: ptr(v1alpha1.ControlledValuesRequestsOnly)})),
			target:    Target{CPU: q("300m")},
			want:      map[string]string{},
			wantSkips: []SkipReason{SkipHPA},
		},
		"a Guaranteed pod keeps its class: the limit cannot leave the request": {
			pod:       builder.Pod("p").Container(builder.Container("app").Requests("100m", "64Mi").Limits("100m", "64Mi")).Obj(),
			spec:      spec(),
			target:    Target{CPU: q("300m")},
			want:      map[string]string{},
			wantSkips: []SkipReason{SkipQoSChange},
		},
		"a limit reaching its request would make the pod Guaranteed: it stays a millicore above": {
			pod:    builder.Pod("p").Container(builder.Container("app").Requests("100m", "64Mi").Limits("200m", "64Mi")).Obj(),
			spec:   spec(),
			target: Target{CPU: q("20m")},
			want:   map[string]string{"app": "req.cpu=100m,lim.cpu=101m"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := Decide(Input{Pod: tc.pod, Spec: tc.spec, Targets: map[string]Target{"app": tc.target}, Holds: cpuHeld,
				WorkingSet: map[string]resource.Quantity{"app": resource.MustParse("40Mi")}, MemoryFloorHeadroom: 0.1, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, rr(d)); diff != "" {
				t.Errorf("desired (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSkips, reasons(d), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("skips (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestDecideKeepsValuesToTheByte: a value the decision keeps stays what it
// was, though it is not a whole number of MiB (a "1G"): rounded up to whole
// MiB, a memory request held for an HPA, or kept at maxAllowed's side of a
// working set above it, moved by a fraction of a MiB, and a resize was sent
// for it (found by the fuzz of DecideSync, TestDecideSyncInvariants).
func TestDecideKeepsValuesToTheByte(t *testing.T) {
	memoryHeld := ownership.Holds{All: map[corev1.ResourceName]bool{corev1.ResourceMemory: true}}
	pod := builder.Pod("p").Container(builder.Container("app").Requests("100m", "1G").Limits("200m", "2G")).Obj()
	cases := map[string]struct {
		spec   *v1alpha1.TailorPolicySpec
		holds  ownership.Holds
		target Target
		ws     string
		want   map[string]string
	}{
		"a request held for an HPA: only the limit moves": {
			spec: spec(), holds: memoryHeld, target: Target{Memory: q("1500Mi")}, ws: "100Mi",
			want: map[string]string{"app": "req.memory=1G,lim.memory=3000Mi"},
		},
		"a limit lowered: the held request stays to the byte": {
			spec: spec(), holds: memoryHeld, target: Target{Memory: q("900Mi")}, ws: "100Mi",
			want: map[string]string{"app": "req.memory=1G,lim.memory=1800Mi"},
		},
		"a working set above maxAllowed holds the request where it is": {
			spec:   spec(containerPolicy(v1alpha1.ContainerPolicy{ContainerName: "*", MaxAllowed: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}})),
			target: Target{Memory: q("100Mi")}, ws: "1500Mi",
			want: map[string]string{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := Decide(Input{Pod: pod, Spec: tc.spec, Targets: map[string]Target{"app": tc.target}, Holds: tc.holds,
				WorkingSet: map[string]resource.Quantity{"app": resource.MustParse(tc.ws)}, MemoryFloorHeadroom: 0.1, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, rr(d)); diff != "" {
				t.Errorf("desired (-want,+got):\n%s", diff)
			}
		})
	}
}

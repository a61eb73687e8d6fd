package room

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/internal/autoscale/lowering/limits"
	"github.com/tailorhq/tailor/test/builder"
)

// pod is a pod of priority prio in namespace ns.
func pod(name string, prio int32) *corev1.Pod {
	return builder.Pod(name).Namespace("ns").UID(name).Priority(prio).Container(builder.Container("app").Requests("1", "1Gi")).Obj()
}

// offer is an offer of policy "low" giving cpu and memory ("" gives none
// of it).
func offer(cpu, memory string) *Offer {
	o := &Offer{Policy: types.NamespacedName{Namespace: "ns", Name: "low"}, Surplus: corev1.ResourceList{}}
	for r, v := range map[corev1.ResourceName]string{corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory} {
		if v != "" {
			o.Surplus[r] = builder.List(v, "0")[corev1.ResourceCPU]
		}
	}
	return o
}

func TestDecide(t *testing.T) {
	forbidden := &Offer{Policy: types.NamespacedName{Namespace: "ns", Name: "off"}, Forbidden: true}
	closed := &Offer{Policy: types.NamespacedName{Namespace: "ns", Name: "nightly"}, Held: limits.HoldOutsideWindow}
	spent := &Offer{Policy: types.NamespacedName{Namespace: "ns", Name: "budgeted"}, Held: limits.HoldBudget}
	cases := map[string]struct {
		shortfall  corev1.ResourceList
		neighbours []Neighbour
		wantAsks   []string
		wantPassed []string
		wantReason Reason
	}{
		"two idle low-priority pods cover the shortfall, the lowest first": {
			shortfall: builder.List("1", "0"),
			neighbours: []Neighbour{
				{Pod: pod("mid", 50), Offer: offer("800m", "")},
				{Pod: pod("low", 10), Offer: offer("400m", "")},
			},
			wantAsks: []string{"low: cpu 400m", "mid: cpu 600m"},
		},
		"at one priority, the largest surplus first; the rest not needed": {
			shortfall: builder.List("500m", "0"),
			neighbours: []Neighbour{
				{Pod: pod("small", 10), Offer: offer("200m", "")},
				{Pod: pod("large", 10), Offer: offer("900m", "")},
			},
			wantAsks:   []string{"large: cpu 500m"},
			wantPassed: []string{"small NotNeeded"},
		},
		"higher, equal, unmanaged, forbidden and held pods never give": {
			shortfall: builder.List("500m", "0"),
			neighbours: []Neighbour{
				{Pod: pod("high", 1000), Offer: offer("2", "")},
				{Pod: pod("equal", 100), Offer: offer("2", "")},
				{Pod: pod("stranger", 0)},
				{Pod: pod("off", 0), Offer: forbidden},
				{Pod: pod("nightly", 0), Offer: closed},
				{Pod: pod("budgeted", 0), Offer: spent},
				{Pod: pod("busy", 0), Offer: offer("", "")},
			},
			wantPassed: []string{"high HigherPriority", "equal EqualPriority", "stranger NotManaged", "off LoweringForbidden", "nightly WindowClosed", "budgeted BudgetSpent", "busy NothingToGive"},
			wantReason: NotEnough,
		},
		"room made in part is not asked for": {
			shortfall: builder.List("1", "0"),
			neighbours: []Neighbour{
				{Pod: pod("a", 10), Offer: offer("300m", "")},
				{Pod: pod("b", 20), Offer: offer("300m", "")},
			},
			wantPassed: []string{"a NotEnough", "b NotEnough"},
			wantReason: NotEnough,
		},
		"a pod giving memory only gives nothing for cpu": {
			shortfall: builder.List("500m", "0"),
			neighbours: []Neighbour{
				{Pod: pod("mem", 10), Offer: offer("", "1")},
			},
			wantPassed: []string{"mem NothingToGive"},
			wantReason: NotEnough,
		},
		"each resource short is covered": {
			shortfall: corev1.ResourceList{corev1.ResourceCPU: builder.List("500m", "0")[corev1.ResourceCPU], corev1.ResourceMemory: builder.List("0", "256Mi")[corev1.ResourceMemory]},
			neighbours: []Neighbour{
				{Pod: pod("cpu", 10), Offer: offer("1", "")},
				{Pod: pod("mem", 10), Offer: offer("", "1Gi")},
			},
			wantAsks: []string{"cpu: cpu 500m", "mem: memory 256Mi"},
		},
		"nothing short asks nothing": {
			shortfall:  builder.List("0", "0"),
			neighbours: []Neighbour{{Pod: pod("low", 10), Offer: offer("1", "")}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := Decide(Input{Pod: pod("needy", 100), Shortfall: tc.shortfall, Neighbours: tc.neighbours})
			var asks, passed []string
			for _, a := range d.Asks {
				asks = append(asks, a.Donor.Name+": "+Text(a.Amount))
			}
			for _, p := range d.Passed {
				passed = append(passed, p.Pod.Name+" "+string(p.Reason))
			}
			if diff := cmp.Diff(tc.wantAsks, asks); diff != "" {
				t.Errorf("asks (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPassed, passed); diff != "" {
				t.Errorf("passed (-want,+got):\n%s", diff)
			}
			if d.Reason != tc.wantReason {
				t.Errorf("reason %q, want %q (%s)", d.Reason, tc.wantReason, d.Message)
			}
			if d.Reason != "" && d.Message == "" {
				t.Errorf("no message says why no room was asked")
			}
		})
	}
}

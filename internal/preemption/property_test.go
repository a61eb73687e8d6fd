package preemption

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	schedhelper "k8s.io/component-helpers/scheduling/corev1"

	"github.com/tailorhq/tailor/internal/propertytest"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
)

// TestPredictProperties draws full nodes: pods of mixed priorities, start
// times and PodDisruptionBudgets beside a pod whose resize is deferred,
// some nodes opting out, some pods that never preempt. The prediction must
// preempt only pods of strictly lower priority; the resize must fit once
// its victims are gone, and not fit with any one of them back (the
// scheduler gives back every pod it can); it must preempt nobody exactly
// when the resize does not fit even without every pod of lower priority,
// when the node opts out, or when the pod never preempts.
func TestPredictProperties(t *testing.T) {
	stats, cases, seed, took := propertytest.Run(t, 41, runPredictCase)
	t.Logf("%d generated nodes (seed %d) in %s: %d preempt (%d victims, %d past a budget), %d not enough, %d opted out, %d never",
		cases, seed, took.Round(time.Millisecond), stats["preempts"], stats["victims"], stats["breaks"], stats["notEnough"], stats["optedOut"], stats["never"])
	propertytest.CheckFloors(t, stats, cases, predictFloors)
}

// predictFloors are half the least of seeds 1-5 at 10,000 cases each
// (2,971 nodes preempting, 5,262 victims, 767 past a budget, 5,052 not
// enough, 974 opted out, 872 never).
var predictFloors = []propertytest.Floor{
	{Stat: "preempts", Per10k: 1485, Why: "resizes the scheduler makes room for must be drawn"},
	{Stat: "victims", Per10k: 2631, Why: "victims must be checked"},
	{Stat: "breaks", Per10k: 383, Why: "victims past a budget must be drawn"},
	{Stat: "notEnough", Per10k: 2526, Why: "resizes no preemption makes room for must be drawn"},
	{Stat: "optedOut", Per10k: 487, Why: "nodes that opt out must be drawn"},
	{Stat: "never", Per10k: 436, Why: "pods that never preempt must be drawn"},
}

var priorities = []int32{0, 10, 100, 1000}

func runPredictCase(seed uint64, stats map[string]int) string {
	r := rand.New(rand.NewPCG(seed, 41))
	cores := 2 + r.IntN(15)
	node := builder.Node("n1").Allocatable(fmt.Sprint(cores), fmt.Sprintf("%dGi", 4+r.IntN(61))).Obj()
	optOut := r.IntN(10) == 0
	if optOut {
		node.Spec.PodPreemptionPolicy = &corev1.NodePodPreemptionPolicy{DisableResizePreemption: []string{"example.com/owner"}}
	}
	draw := func(name string) *corev1.Pod {
		cpu := resource.NewMilliQuantity(int64(100+r.IntN(cores*600)), resource.DecimalSI)
		mem := resource.NewQuantity(int64(64+r.IntN(4096))<<20, resource.BinarySI)
		p := builder.Pod(name).Namespace("ns").UID(name).Node("n1").Priority(priorities[r.IntN(len(priorities))]).
			Label("app", fmt.Sprintf("app%d", r.IntN(3))).
			Container(builder.Container("app").Requests(cpu.String(), mem.String())).Running().Obj()
		if r.IntN(5) != 0 {
			p.Status.StartTime = &metav1.Time{Time: now.Add(-time.Duration(r.IntN(600)) * time.Minute)}
		}
		if r.IntN(15) == 0 {
			p.Status.Phase = corev1.PodSucceeded
		}
		return p
	}
	raised := draw("raised")
	raised.Status.Phase = corev1.PodRunning
	never := r.IntN(10) == 0
	if never {
		raised.Spec.PreemptionPolicy = new(corev1.PreemptNever)
	}
	pods := []*corev1.Pod{raised}
	for i := range 1 + r.IntN(12) {
		pods = append(pods, draw(fmt.Sprintf("p%d", i)))
	}
	var budgets []policyv1.PodDisruptionBudget
	for i := range r.IntN(3) {
		budgets = append(budgets, budget(fmt.Sprintf("app%d", i), int32(r.IntN(3))))
	}
	out := Predict(Input{Pod: raised, Node: node, Pods: pods, Budgets: budgets, Now: now})

	prio := schedhelper.PodPriority(raised)
	victim := map[types.UID]bool{}
	for _, v := range out.Victims {
		switch {
		case victim[v.Pod.UID]:
			return fmt.Sprintf("%s preempted twice", v.Pod.Name)
		case v.Pod.UID == raised.UID:
			return "the resized pod preempts itself"
		case schedhelper.PodPriority(v.Pod) >= prio:
			return fmt.Sprintf("%s of priority %d preempted for a pod of priority %d", v.Pod.Name, schedhelper.PodPriority(v.Pod), prio)
		case v.Pod.Status.Phase == corev1.PodSucceeded:
			return fmt.Sprintf("finished pod %s preempted", v.Pod.Name)
		case v.BreaksBudget && len(budgets) == 0:
			return fmt.Sprintf("%s breaks a budget where there is none", v.Pod.Name)
		}
		victim[v.Pod.UID] = true
	}
	// What the node counts without some pods.
	fitsWithout := func(gone func(*corev1.Pod) bool) bool {
		used := corev1.ResourceList{}
		for _, p := range pods {
			if p.Status.Phase != corev1.PodSucceeded && !gone(p) {
				add(used, resize.NodeRequests(p))
			}
		}
		return fits(used, node.Status.Allocatable)
	}
	lower := func(p *corev1.Pod) bool { return schedhelper.PodPriority(p) < prio }
	want := Preempts
	switch {
	case optOut:
		want = NodeOptsOut
	case never:
		want = PolicyNever
	case !fitsWithout(lower):
		want = NotEnough
	}
	if out.Reason != want {
		return fmt.Sprintf("reason %s, want %s (%s)", out.Reason, want, out.Message)
	}
	if want != Preempts {
		if len(out.Victims) > 0 {
			return fmt.Sprintf("%s, yet %d victims", out.Reason, len(out.Victims))
		}
		stats[map[Reason]string{NodeOptsOut: "optedOut", PolicyNever: "never", NotEnough: "notEnough"}[want]]++
		return ""
	}
	stats["preempts"]++
	if !fitsWithout(func(p *corev1.Pod) bool { return victim[p.UID] }) {
		return fmt.Sprintf("the resize does not fit once %d victims are gone", len(out.Victims))
	}
	for _, v := range out.Victims {
		stats["victims"]++
		if v.BreaksBudget {
			stats["breaks"]++
		}
		if fitsWithout(func(p *corev1.Pod) bool { return victim[p.UID] && p.UID != v.Pod.UID }) {
			return fmt.Sprintf("%s preempted, yet the resize fits with it back", v.Pod.Name)
		}
	}
	return ""
}

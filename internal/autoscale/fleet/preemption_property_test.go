package fleet

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	schedhelper "k8s.io/component-helpers/scheduling/corev1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/propertytest"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
)

// TestPreemptProperties: over generated nodes holding a pod that wants a
// raise beside pods of lower, equal and higher priority, with and without
// Preempt, DecidePolicy never sends a raise beyond the node's free room
// unless Preempt says it may; one it sends beyond is one the scheduler
// would preempt for, fits once the pods it names are gone, names only pods
// of strictly lower priority, and never counts on room that pods of equal
// or higher priority hold.
func TestPreemptProperties(t *testing.T) {
	stats, cases, seed, took := propertytest.Run(t, 43, runPreemptCase)
	t.Logf("%d cases (seed %d, stream 43) in %s: %v", cases, seed, took.Round(time.Millisecond), stats)
	propertytest.CheckFloors(t, stats, cases, []propertytest.Floor{
		{Stat: "sent-beyond", Per10k: 1980, Why: "raises must be sent for the scheduler to preempt for"},
		{Stat: "held-no-victims", Per10k: 225, Why: "raises the scheduler would not preempt for must be drawn"},
		{Stat: "fits-free", Per10k: 2700, Why: "raises that fit the free room must be drawn too"},
	})
}

func runPreemptCase(seed uint64, stats map[string]int) string {
	r := rand.New(rand.NewPCG(seed, 43))
	milli := func(lo, hi int) string { return fmt.Sprintf("%dm", lo+r.IntN(hi-lo+1)) }
	prio := int32(100)
	needy := builder.Pod("needy").UID("needy").Node("n1").
		Container(builder.Container("app").Requests(milli(100, 1000), "128Mi").Limits("", "256Mi")).Running().Obj()
	needy.Spec.Priority = &prio
	if r.IntN(10) == 0 {
		never := corev1.PreemptNever
		needy.Spec.PreemptionPolicy = &never
	}
	pods := []*corev1.Pod{needy}
	for i := range 1 + r.IntN(5) {
		p := builder.Pod(fmt.Sprintf("o%d", i)).UID(fmt.Sprintf("o%d", i)).Node("n1").
			Container(builder.Container("app").Requests(milli(100, 1500), "128Mi")).Running().Obj()
		pp := []int32{10, 100, 1000}[r.IntN(3)]
		p.Spec.Priority = &pp
		pods = append(pods, p)
	}
	// The node holds its pods, as a real one does, with up to a core
	// free.
	var used int64
	for _, p := range pods {
		l := resize.NodeRequests(p)
		used += l.Cpu().MilliValue()
	}
	node := &resize.NodeState{Name: "n1", Allocatable: builder.List(fmt.Sprintf("%dm", used+int64(r.IntN(1000))), "16Gi"), Pods: pods}
	preempt := r.IntN(4) != 0
	// A raise, of up to four cores.
	target := *needy.Spec.Containers[0].Resources.Requests.Cpu()
	target.Add(resource.MustParse(milli(50, 4000)))
	d, err := DecidePolicy(PolicyInput{Spec: spec(func(s *v1alpha1.TailorPolicySpec) {
		s.Behavior = &v1alpha1.Behavior{ScaleUp: &v1alpha1.ScaleUpRules{Preemption: v1alpha1.ResizePreemptionLowerPriority}}
	}), Pods: []PodInput{{Pod: needy, Targets: map[string]podchange.Target{"app": {CPU: &target}}, Preempt: preempt}},
		Nodes: map[string]*resize.NodeState{"n1": node}, Server: v137, Now: now})
	if err != nil {
		return err.Error()
	}
	if len(d.Resizes) == 0 {
		// Held: only where preempting the pods of lower priority would
		// not make room, or the scheduler preempts nobody for this pod.
		var lower int64
		for _, p := range pods[1:] {
			if schedhelper.PodPriority(p) < prio {
				l := resize.NodeRequests(p)
				lower += l.Cpu().MilliValue()
			}
		}
		if preempt && needy.Spec.PreemptionPolicy == nil && lower > 0 {
			return fmt.Sprintf("held (%v) though the pods of lower priority hold %dm the scheduler could free", held(d), lower)
		}
		for _, h := range d.Held {
			if h.Reason == HoldNoRoom && preempt {
				stats["held-no-victims"]++
			}
		}
		return ""
	}
	a := d.Resizes[0]
	after := a.Plan.AfterPod()
	// What the node counts with the raise, against what pods of each
	// rank hold.
	sum := func(keep func(*corev1.Pod) bool) int64 {
		cpu := func(p *corev1.Pod) int64 { l := resize.NodeRequests(p); return l.Cpu().MilliValue() }
		total := cpu(after)
		for _, p := range pods[1:] {
			if keep(p) {
				total += cpu(p)
			}
		}
		return total
	}
	alloc := node.Allocatable.Cpu().MilliValue()
	if sum(func(*corev1.Pod) bool { return true }) <= alloc {
		if a.Preemption != nil && len(a.Preemption.Victims) > 0 {
			return fmt.Sprintf("a raise that fits the free room names victims: %s", a.Preemption.Message)
		}
		stats["fits-free"]++
		return ""
	}
	switch {
	case !preempt:
		return fmt.Sprintf("without Preempt, a raise to %s sent beyond the free room (%dm of %dm)", after.Spec.Containers[0].Resources.Requests.Cpu(), sum(func(*corev1.Pod) bool { return true }), alloc)
	case a.Preemption == nil || len(a.Preemption.Victims) == 0:
		return "a raise sent beyond the free room names no pod the scheduler would preempt"
	case sum(func(p *corev1.Pod) bool { return schedhelper.PodPriority(p) >= prio }) > alloc:
		return fmt.Sprintf("the raise counts on room pods of equal or higher priority hold: %dm above %dm", sum(func(p *corev1.Pod) bool { return schedhelper.PodPriority(p) >= prio }), alloc)
	}
	gone := map[types.UID]bool{}
	for _, v := range a.Preemption.Victims {
		if schedhelper.PodPriority(v.Pod) >= prio {
			return fmt.Sprintf("victim %s of priority %d for a pod of priority %d", v.Pod.Name, schedhelper.PodPriority(v.Pod), prio)
		}
		gone[v.Pod.UID] = true
	}
	if got := sum(func(p *corev1.Pod) bool { return !gone[p.UID] }); got > alloc {
		return fmt.Sprintf("with its victims gone the raise still does not fit: %dm of %dm", got, alloc)
	}
	stats["sent-beyond"]++
	return ""
}

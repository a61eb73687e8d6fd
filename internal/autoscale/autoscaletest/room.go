package autoscaletest

import (
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	schedhelper "k8s.io/component-helpers/scheduling/corev1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/autoscale/room"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/resize"
)

// roomStream is the stream a case's room is drawn from, apart from the
// rest of it: a seed drew the same namespace before room-making was.
const roomStream = 37

// drawRoom gives some syncs of c what making room in place reads: every
// node sought, or none; for some pods, the lowerings only a stabilization
// window holds back (early targets, taken out of the targets as the advice
// does); and, for some of those, an ask for room standing from a pod of
// lower, equal or higher priority. A pod asked is a candidate whose node
// the sync reads, as the controller's candidateNodes makes it.
func drawRoom(seed uint64, c *SyncCase) {
	g := gen{r: rand.New(rand.NewPCG(seed, roomStream))}
	for i := range c.Syncs {
		in := &c.Syncs[i]
		if g.chance(0.5) {
			in.Room.Sought = map[string]bool{}
			for _, np := range c.Nodes {
				in.Room.Sought[np.Node.Name] = true
			}
		}
		for j := range in.Pods {
			pin := &in.Pods[j]
			if !g.chance(0.5) {
				continue
			}
			pin.Targets, pin.Early = g.early(pin.Pod, pin.Targets)
			if len(pin.Early) == 0 || !g.chance(0.7) {
				continue
			}
			if in.Room.Asked == nil {
				in.Room.Asked = map[types.UID]room.Asked{}
			}
			in.Room.Asked[pin.Pod.UID] = g.asked(pin.Pod)
			if in.Spec.Mode() != v1alpha1.UpdateModeOff {
				addNode(in, c, pin.Pod.Spec.NodeName)
			}
		}
	}
}

// early splits targets as a stabilization window does: a lowering of a
// container's request is held back now and then (kept in early, taken out
// of the targets), and where the targets set none, early lowers the
// request to a tenth to nine tenths of the container's. Early holds the
// targets as they would be were the window over.
func (g gen) early(p *corev1.Pod, targets map[string]podchange.Target) (held, early map[string]podchange.Target) {
	held, early = map[string]podchange.Target{}, map[string]podchange.Target{}
	for name, t := range targets {
		held[name] = t
	}
	for _, c := range podcontainers.Running(&p.Spec) {
		t := held[c.Name]
		e := t
		if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
			switch {
			case t.CPU == nil && q.MilliValue() > 1:
				e.CPU = resource.NewMilliQuantity(q.MilliValue()*int64(1+g.r.IntN(9))/10, resource.DecimalSI)
			case t.CPU != nil && t.CPU.Cmp(q) < 0 && g.chance(0.5):
				t.CPU = nil
			}
		}
		if q, ok := c.Resources.Requests[corev1.ResourceMemory]; ok {
			switch {
			case t.Memory == nil && q.Value() > 1<<20:
				e.Memory = resource.NewQuantity(q.Value()*int64(1+g.r.IntN(9))/10, resource.BinarySI)
			case t.Memory != nil && t.Memory.Cmp(q) < 0 && g.chance(0.5):
				t.Memory, t.MemoryLimit = nil, nil
			}
		}
		if t.CPU != nil || t.Memory != nil || t.MemoryLimit != nil {
			held[c.Name] = t
		} else {
			delete(held, c.Name)
		}
		if e.CPU != nil || e.Memory != nil || e.MemoryLimit != nil {
			early[c.Name] = e
		}
	}
	return held, early
}

// asked is an ask for room of p, for its CPU, its memory or both, from a
// pod of lower, equal or (as often as both) higher priority.
func (g gen) asked(p *corev1.Pod) room.Asked {
	prio := schedhelper.PodPriority(p) + []int32{-1, 0, 1000, 1000}[g.r.IntN(4)]
	amount := corev1.ResourceList{}
	switch g.r.IntN(3) {
	case 0:
		amount[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(1+g.r.IntN(2000)), resource.DecimalSI)
	case 1:
		amount[corev1.ResourceMemory] = *resource.NewQuantity(int64(1+g.r.IntN(2<<10))<<20, resource.BinarySI)
	default:
		amount[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(1+g.r.IntN(2000)), resource.DecimalSI)
		amount[corev1.ResourceMemory] = *resource.NewQuantity(int64(1+g.r.IntN(2<<10))<<20, resource.BinarySI)
	}
	return room.Asked{For: types.NamespacedName{Namespace: "other", Name: "needy"}, Priority: prio, Amount: amount}
}

// addNode gives in the node named, with every pod bound to it.
func addNode(in *autoscale.SyncInput, c *SyncCase, name string) {
	for _, np := range c.Nodes {
		if np.Node.Name != name {
			continue
		}
		if in.Nodes == nil {
			in.Nodes = map[string]*resize.NodeState{}
		}
		if in.Nodes[name] == nil {
			in.Nodes[name] = &resize.NodeState{Allocatable: np.Node.Status.Allocatable, Pods: np.Pods}
		}
	}
}

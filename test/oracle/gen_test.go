package oracle

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
)

// The generator draws quantities from short ladders so that equal values
// (requests == limits, pod request == container sum) come up often: those
// equalities are where the QoS and consistency rules flip.
var (
	cpuLadder = []string{"100m", "200m", "250m", "500m", "750m", "1", "1500m", "2"}
	memLadder = []string{"64Mi", "128Mi", "256Mi", "512Mi", "1Gi", "2Gi"}
)

type gen struct{ r *rand.Rand }

func (g gen) pick(l []string) string { return l[g.r.IntN(len(l))] }
func (g gen) chance(p float64) bool  { return g.r.Float64() < p }

func (g gen) ladder(name corev1.ResourceName) []string {
	if name == corev1.ResourceCPU {
		return cpuLadder
	}
	return memLadder
}

// twoSorted returns a <= b from the ladder.
func (g gen) twoSorted(name corev1.ResourceName) (string, string) {
	l := g.ladder(name)
	i, j := g.r.IntN(len(l)), g.r.IntN(len(l))
	if i > j {
		i, j = j, i
	}
	return l[i], l[j]
}

// podClass is the QoS shape the generator aims a pod at.
type podClass int

const (
	classBurstable podClass = iota
	classGuaranteed
	classBestEffort
	classPodLevel
)

// gatedPod builds a random valid pod that never schedules (a scheduling
// gate), so the apiserver validates resizes without any kubelet involved.
func (g gen) gatedPod(name string) *corev1.Pod {
	class := podClass(g.r.IntN(4))
	p := builder.Pod(name).SchedulingGate("tailor.dev/oracle").TerminationGracePeriod(0)
	never := g.chance(0.15)
	if never {
		p.RestartPolicy(corev1.RestartPolicyNever)
	}
	policy := func(c *builder.ContainerWrapper, allowRestart bool) *builder.ContainerWrapper {
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			switch {
			case g.chance(0.4):
			case allowRestart && !never && g.chance(0.5):
				c.ResizePolicy(res, corev1.RestartContainer)
			default:
				c.ResizePolicy(res, corev1.NotRequired)
			}
		}
		return c
	}
	ctr := func(n string) *builder.ContainerWrapper {
		c := builder.Container(n)
		g.resources(c, class)
		if g.chance(0.1) {
			c.Request(corev1.ResourceEphemeralStorage, "1Gi")
		}
		return c
	}
	p.Container(policy(ctr("app"), true))
	for i := range g.r.IntN(2) {
		p.Container(policy(ctr(fmt.Sprintf("c%d", i)), true))
	}
	if g.chance(0.4) {
		p.Sidecar(policy(ctr("sidecar"), true))
	}
	if g.chance(0.4) {
		// Non-sidecar init containers may not carry RestartContainer (1.37 create validation).
		p.InitContainer(policy(ctr("init"), false))
	}
	pod := p.Obj()
	if class == classPodLevel {
		g.podLevel(pod)
	} else if g.chance(0.05) {
		// Windows pods validate but may never be resized.
		pod.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
	}
	return pod
}

// resources fills a container's cpu/memory for the pod class.
func (g gen) resources(c *builder.ContainerWrapper, class podClass) {
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		lo, hi := g.twoSorted(res)
		switch class {
		case classBestEffort:
		case classGuaranteed:
			c.Request(res, hi).Limit(res, hi)
		case classPodLevel:
			if g.chance(0.5) {
				c.Request(res, lo)
			}
			if g.chance(0.3) {
				c.Limit(res, hi)
			}
		default:
			switch g.r.IntN(5) {
			case 0:
			case 1:
				c.Request(res, lo)
			case 2:
				c.Limit(res, hi) // the apiserver defaults the request to it
			case 3:
				c.Request(res, lo).Limit(res, hi)
			case 4:
				c.Request(res, hi).Limit(res, hi)
			}
		}
	}
}

// podLevel adds valid pod-level resources: requests at or above the
// aggregate container requests, limits at or above every container limit.
func (g gen) podLevel(pod *corev1.Pod) {
	// Aggregate what the apiserver will see: a limit without a request
	// defaults the request.
	defaulted := pod.DeepCopy()
	for _, list := range [][]corev1.Container{defaulted.Spec.Containers, defaulted.Spec.InitContainers} {
		for i := range list {
			for name, q := range list[i].Resources.Limits {
				if _, ok := list[i].Resources.Requests[name]; !ok {
					if list[i].Resources.Requests == nil {
						list[i].Resources.Requests = corev1.ResourceList{}
					}
					list[i].Resources.Requests[name] = q
				}
			}
		}
	}
	aggr := aggregateRequests(defaulted)
	r := &corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		floor := aggr[res]
		for _, c := range pod.Spec.Containers {
			if l, ok := c.Resources.Limits[res]; ok && l.Cmp(floor) > 0 {
				floor = l
			}
		}
		reqQ := atLeast(floor, g.ladder(res), g)
		limQ := atLeast(reqQ, g.ladder(res), g)
		switch g.r.IntN(4) {
		case 0:
			r.Requests[res] = reqQ
		case 1:
			r.Limits[res] = limQ
		case 2:
			r.Requests[res], r.Limits[res] = reqQ, limQ
		case 3:
			r.Requests[res], r.Limits[res] = limQ, limQ
		}
	}
	pod.Spec.Resources = r
}

// atLeast picks a ladder value >= floor, or floor itself when the ladder tops out.
func atLeast(floor resource.Quantity, ladder []string, g gen) resource.Quantity {
	var ok []resource.Quantity
	for _, s := range ladder {
		if q := resource.MustParse(s); q.Cmp(floor) >= 0 {
			ok = append(ok, q)
		}
	}
	if len(ok) == 0 || g.chance(0.2) {
		if floor.IsZero() {
			return resource.MustParse(ladder[0])
		}
		return floor.DeepCopy()
	}
	return ok[g.r.IntN(len(ok))]
}

// desired draws one to three random edits, biased towards rule corners.
func (g gen) desired(pod *corev1.Pod, alloc corev1.ResourceList) resize.Desired {
	d := resize.Desired{Containers: map[string]corev1.ResourceRequirements{}}
	names := []string{}
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	edit := func(name string) *corev1.ResourceRequirements {
		r := d.Containers[name]
		if r.Requests == nil {
			r.Requests = corev1.ResourceList{}
		}
		if r.Limits == nil {
			r.Limits = corev1.ResourceList{}
		}
		d.Containers[name] = r
		return &r
	}
	podEdit := func() *corev1.ResourceRequirements {
		if d.Pod == nil {
			d.Pod = &corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
		}
		return d.Pod
	}
	res := func() corev1.ResourceName {
		if g.chance(0.5) {
			return corev1.ResourceCPU
		}
		return corev1.ResourceMemory
	}
	q := func(r corev1.ResourceName) resource.Quantity { return resource.MustParse(g.pick(g.ladder(r))) }

	if alloc != nil && g.chance(0.5) {
		// Node-capacity corners: requests at exactly the node's allocatable
		// (admitted) or just above it (refused by PodResizeValidator).
		name := names[g.r.IntN(len(names))]
		e := edit(name)
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if g.chance(0.5) {
				continue
			}
			v := alloc[r].DeepCopy()
			if g.chance(0.5) {
				if r == corev1.ResourceMemory {
					v.Add(resource.MustParse("1Mi"))
				} else {
					v.Add(resource.MustParse("1m"))
				}
			}
			e.Requests[r] = v
			if g.chance(0.5) {
				e.Limits[r] = v
			}
		}
		if g.chance(0.3) && pod.Spec.Resources != nil {
			pe := podEdit()
			pe.Requests[corev1.ResourceCPU] = alloc[corev1.ResourceCPU].DeepCopy()
			pe.Limits[corev1.ResourceCPU] = alloc[corev1.ResourceCPU].DeepCopy()
		}
		return d
	}
	for range 1 + g.r.IntN(3) {
		name := names[g.r.IntN(len(names))]
		r := res()
		switch op := g.r.IntN(120); {
		case op >= 100: // shape-keeping scale of what the container has: the common tailor edit
			c := findContainer(pod, name)
			e := edit(name)
			for rr, v := range c.Resources.Requests {
				if rr == corev1.ResourceCPU || rr == corev1.ResourceMemory {
					e.Requests[rr] = scaled(v, g.chance(0.5))
				}
			}
			for rr, v := range c.Resources.Limits {
				if rr == corev1.ResourceCPU || rr == corev1.ResourceMemory {
					e.Limits[rr] = scaled(v, g.chance(0.5))
				}
			}
			if pod.Spec.Resources != nil && g.chance(0.5) {
				pe := podEdit()
				for rr, v := range pod.Spec.Resources.Requests {
					pe.Requests[rr] = scaled(v, true)
				}
				for rr, v := range pod.Spec.Resources.Limits {
					pe.Limits[rr] = scaled(v, true)
				}
			}
		case op < 25:
			edit(name).Requests[r] = q(r)
		case op < 45:
			edit(name).Limits[r] = q(r)
		case op < 60: // requests == limits: keeps Guaranteed, may make Burstable Guaranteed
			v := q(r)
			e := edit(name)
			e.Requests[r], e.Limits[r] = v, v
		case op < 68: // both resources equal: the Guaranteed corner
			e := edit(name)
			for _, rr := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				v := q(rr)
				e.Requests[rr], e.Limits[rr] = v, v
			}
		case op < 72:
			if d.Remove == nil {
				d.Remove = map[string]resize.Removal{}
			}
			rm := d.Remove[name]
			if g.chance(0.5) {
				rm.Requests = append(rm.Requests, r)
			} else {
				rm.Limits = append(rm.Limits, r)
			}
			d.Remove[name] = rm
		case op < 75:
			edit(name).Requests[corev1.ResourceEphemeralStorage] = resource.MustParse("2Gi")
		case op < 85:
			podEdit().Requests[r] = q(r)
		case op < 93:
			podEdit().Limits[r] = q(r)
		case op < 95:
			if d.RemoveFromPod == nil {
				d.RemoveFromPod = &resize.Removal{}
			}
			d.RemoveFromPod.Limits = append(d.RemoveFromPod.Limits, r)
		default:
			if alloc != nil { // node-capacity corners: exactly allocatable, or just above
				v := alloc[r].DeepCopy()
				if g.chance(0.5) {
					if r == corev1.ResourceMemory {
						v.Add(resource.MustParse("1Mi"))
					} else {
						v.Add(resource.MustParse("1m"))
					}
				}
				e := edit(name)
				e.Requests[r] = v
				e.Limits[r] = v
			} else {
				edit(name).Requests[r] = resource.MustParse("64")
			}
		}
	}
	return d
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// scaled doubles q, or halves it.
func scaled(q resource.Quantity, up bool) resource.Quantity {
	v := q.MilliValue()
	if up {
		v *= 2
	} else {
		v /= 2
	}
	if q.Format == resource.BinarySI {
		return *resource.NewQuantity(v/1000, resource.BinarySI)
	}
	return *resource.NewMilliQuantity(v, resource.DecimalSI)
}

// ruleEdge draws a resize of pod that often meets a rule of the namespace
// at its edge: a container's value at a LimitRange's min or max or one unit
// beyond, or a raise that takes exactly what a quota has left, or one unit
// more. Otherwise, and where no rule has an edge to meet, it is desired's.
func (g gen) ruleEdge(pod *corev1.Pod, rules *nsrules.Rules) resize.Desired {
	var ctrs []*corev1.Container
	for i := range pod.Spec.InitContainers {
		ctrs = append(ctrs, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		ctrs = append(ctrs, &pod.Spec.Containers[i])
	}
	c := ctrs[g.r.IntN(len(ctrs))]
	var d resize.Desired
	var ok bool
	switch x := g.r.Float64(); {
	case x < 0.35:
		d, ok = g.limitRangeEdge(c, rules)
	case x < 0.7:
		d, ok = g.quotaEdge(c, rules)
	}
	if !ok {
		return g.desired(pod, nil)
	}
	return d
}

// limitRangeEdge sets one of c's values to a Container item's min or max,
// or one unit beyond it.
func (g gen) limitRangeEdge(c *corev1.Container, rules *nsrules.Rules) (resize.Desired, bool) {
	type bound struct {
		res corev1.ResourceName
		max bool
		q   resource.Quantity
	}
	var bounds []bound
	for _, lr := range rules.LimitRanges {
		for _, it := range lr.Spec.Limits {
			if it.Type != corev1.LimitTypeContainer {
				continue
			}
			for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if q, ok := it.Min[res]; ok {
					bounds = append(bounds, bound{res, false, q})
				}
				if q, ok := it.Max[res]; ok {
					bounds = append(bounds, bound{res, true, q})
				}
			}
		}
	}
	if len(bounds) == 0 {
		return resize.Desired{}, false
	}
	b := bounds[g.r.IntN(len(bounds))]
	v := b.q.DeepCopy()
	switch g.r.IntN(3) {
	case 1:
		v.Add(oneUnit(b.res))
	case 2:
		if v.Cmp(oneUnit(b.res)) > 0 {
			v.Sub(oneUnit(b.res))
		}
	}
	return g.setValue(c, b.res, v, b.max), true
}

// quotaEdge raises one of c's values by what a quota has left of it, or one
// unit more.
func (g gen) quotaEdge(c *corev1.Container, rules *nsrules.Rules) (resize.Desired, bool) {
	type left struct {
		res   corev1.ResourceName
		limit bool
		q     resource.Quantity
	}
	var lefts []left
	for _, q := range rules.Quotas {
		for name, hard := range q.Status.Hard {
			if !slices.Contains(quotaNames, name) {
				continue
			}
			room := hard.DeepCopy()
			room.Sub(q.Status.Used[name])
			res, limit := corev1.ResourceCPU, strings.HasPrefix(string(name), "limits.")
			if strings.HasSuffix(string(name), "memory") {
				res = corev1.ResourceMemory
			}
			lefts = append(lefts, left{res, limit, room})
		}
	}
	if len(lefts) == 0 {
		return resize.Desired{}, false
	}
	l := lefts[g.r.IntN(len(lefts))]
	list := c.Resources.Requests
	if l.limit {
		list = c.Resources.Limits
	}
	now, ok := list[l.res]
	if !ok || l.q.Sign() < 0 {
		return resize.Desired{}, false
	}
	v := now.DeepCopy()
	v.Add(l.q)
	if g.chance(0.5) {
		v.Add(oneUnit(l.res))
	}
	return g.setValue(c, l.res, v, l.limit), true
}

// setValue sets c's limit (asLimit) or request of res to v, moving the
// other with it where it would pass it, or where they were equal (a
// Guaranteed container stays so).
func (g gen) setValue(c *corev1.Container, res corev1.ResourceName, v resource.Quantity, asLimit bool) resize.Desired {
	req, hasReq := c.Resources.Requests[res]
	lim, hasLim := c.Resources.Limits[res]
	want := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	equal := hasReq && hasLim && req.Cmp(lim) == 0
	if asLimit {
		want.Limits[res] = v
		if hasReq && (equal || req.Cmp(v) > 0) {
			want.Requests[res] = v
		}
	} else {
		want.Requests[res] = v
		if hasLim && (equal || lim.Cmp(v) < 0) {
			want.Limits[res] = v
		}
	}
	return resize.Desired{Containers: map[string]corev1.ResourceRequirements{c.Name: want}}
}

func oneUnit(res corev1.ResourceName) resource.Quantity {
	if res == corev1.ResourceCPU {
		return resource.MustParse("1m")
	}
	return resource.MustParse("1Mi")
}

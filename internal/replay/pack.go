package replay

import (
	"hash/fnv"
	"slices"
	"strconv"
	"time"
)

// packStep is the packing's clock: every series' latest sample stands for
// its usage through each step, so that series sampled at different moments
// share nodes.
const packStep = 5 * time.Minute

// usageCarry is how long a container's last memory reading stands for its
// usage when no sample comes (a VM off, or memory not measured); after it
// the container uses nothing but keeps its request.
const usageCarry = 15 * time.Minute

// pod is one series' container for the packing: the series' usage and the
// plan of requests and limits a policy had in force under one shape.
type pod struct {
	series *Series
	plan   []plan
}

// nodeTally counts the nodes in use over the packing's steps.
type nodeTally struct {
	// steps counts steps with at least one pod placed; nodeSteps sums the
	// nodes in use over them.
	steps     int
	nodeSteps float64
}

// packResult is what a packing found, by half (before and after the split).
type packResult struct {
	// evictions are charged to pods, indexed like pack's pods.
	evictions [][2]int
	nodes     [2]nodeTally
}

// node is a simulated node: its memory and the requests placed on it.
type node struct {
	capacity, requested float64
	pods                int
}

// podState is a pod's place and what it has in force during the packing.
type podState struct {
	placed   bool
	done     bool
	node     int
	req, lim float64
	// usage is the last memory reading; seen the step of the last sample.
	usage float64
	seen  int
	// next is the next sample, nextPlan the next plan entry, to apply.
	next, nextPlan int
}

// pack places the pods onto nodes of nodeMemory bytes by their memory
// requests, as a scheduler would, and counts node-pressure evictions as a
// kubelet makes them: in each step in which a node's pods use more than
// its memory, each pod counted up to its limit (the kernel kills a
// container at its limit before it uses more), the kubelet evicts pods in
// its order until the rest fit: first the pods using more than their
// requests, then (all pods being of one priority here) the one furthest
// above its request. Each is one eviction, charged to that pod. An evicted
// pod is recreated by its controller and placed again by first fit, on
// another node than the one under pressure (the kubelet taints it
// NoSchedule while it is), with the request its policy has in force.
//
// Placement is first fit, the pods taken in an order fixed by a hash of
// their names (not their numbering, which groups like workloads), each
// placed at its first scored sample. A pod stays where it is while its
// request fits there: lowering always fits, and a raise that fits is
// resized in place, as the kubelet admits it. A raise that does not fit is
// placed again by first fit, as a new pod (a recreation) would be; no
// other pod moves. Another salt is another order, the same for every
// policy: a fleet's evictions are a handful a month, and which pods share
// a node moves them as much as the requests do. A node that fits no pod is added: one of nodeMemory
// bytes, or, for a request larger than that, the smallest size doubling
// from it that holds the request, as a node pool of one instance family
// (whose sizes double) would add; the other pods may fill it. The result
// is deterministic.
func pack(pods []pod, nodeMemory float64, split time.Time, salt int) packResult {
	res := packResult{evictions: make([][2]int, len(pods))}
	order := packOrder(pods, salt)
	var origin, end time.Time
	for _, p := range pods {
		if len(p.plan) == 0 {
			continue
		}
		a := p.series.Samples[p.plan[0].at].Time
		b := p.series.Samples[len(p.series.Samples)-1].Time
		if origin.IsZero() || a.Before(origin) {
			origin = a
		}
		if b.After(end) {
			end = b
		}
	}
	if origin.IsZero() {
		return res
	}
	origin = origin.Truncate(packStep)
	st := make([]podState, len(pods))
	for i, p := range pods {
		st[i].done = len(p.plan) == 0
		if !st[i].done {
			st[i].next = int(p.plan[0].at)
		}
	}
	var nodes []node
	carry := int(usageCarry / packStep)
	// place puts pod i on the first node other than avoid (-1: none)
	// where its request fits.
	place := func(i, avoid int) {
		ps := &st[i]
		for n := range nodes {
			if n != avoid && nodes[n].requested+ps.req <= nodes[n].capacity {
				ps.node, ps.placed = n, true
				nodes[n].requested += ps.req
				nodes[n].pods++
				return
			}
		}
		nodes = append(nodes, node{capacity: nodeSize(nodeMemory, ps.req), requested: ps.req, pods: 1})
		ps.node, ps.placed = len(nodes)-1, true
	}
	unplace := func(i int) {
		ps := &st[i]
		nodes[ps.node].requested -= ps.req
		nodes[ps.node].pods--
		ps.placed = false
	}
	steps := int(end.Sub(origin)/packStep) + 1
	var used []float64
	var members [][]int
	var evicted [][2]int
	for k := range steps {
		stepEnd := origin.Add(time.Duration(k+1) * packStep)
		for _, i := range order {
			ps, p := &st[i], pods[i]
			if ps.done {
				continue
			}
			samples := p.series.Samples
			for ps.next < len(samples) && samples[ps.next].Time.Before(stepEnd) {
				j := ps.next
				if ps.nextPlan < len(p.plan) && int(p.plan[ps.nextPlan].at) == j {
					step := p.plan[ps.nextPlan]
					ps.nextPlan++
					req, lim := float64(step.request), float64(step.limit)
					switch {
					case !ps.placed:
						ps.req, ps.lim = req, lim
						place(i, -1)
					case nodes[ps.node].requested-ps.req+req <= nodes[ps.node].capacity:
						nodes[ps.node].requested += req - ps.req
						ps.req, ps.lim = req, lim
					default:
						unplace(i)
						ps.req, ps.lim = req, lim
						place(i, -1)
					}
				}
				if samples[j].HasMemory() {
					ps.usage = samples[j].Memory
				}
				ps.seen = k
				ps.next++
			}
			if ps.next == len(samples) && k > ps.seen {
				// The series has ended: its pod is gone.
				unplace(i)
				ps.done = true
			}
		}
		// Each node's usage, and the pods counted in it.
		used = slices.Grow(used[:0], len(nodes))[:len(nodes)]
		for len(members) < len(nodes) {
			members = append(members, nil)
		}
		inUse := 0
		for n := range nodes {
			used[n], members[n] = 0, members[n][:0]
			if nodes[n].pods > 0 {
				inUse++
			}
		}
		if inUse == 0 {
			continue
		}
		for _, i := range order {
			ps := &st[i]
			if !ps.placed || k-ps.seen > carry {
				continue
			}
			used[ps.node] += ps.used()
			members[ps.node] = append(members[ps.node], i)
		}
		half := 0
		if !origin.Add(time.Duration(k) * packStep).Before(split) {
			half = 1
		}
		res.nodes[half].steps++
		res.nodes[half].nodeSteps += float64(inUse)
		evicted = evicted[:0]
		for n := range nodes {
			if used[n] <= nodes[n].capacity {
				continue
			}
			// The kubelet's order; the sort is stable, so ties keep the
			// packing's order.
			slices.SortStableFunc(members[n], func(a, b int) int { return evictionOrder(&st[a], &st[b]) })
			for _, i := range members[n] {
				if used[n] <= nodes[n].capacity {
					break
				}
				used[n] -= st[i].used()
				unplace(i)
				res.evictions[i][half]++
				evicted = append(evicted, [2]int{i, n})
			}
		}
		// Recreated after every node is relieved, so that a replacement
		// is not counted twice in one step.
		for _, e := range evicted {
			place(e[0], e[1])
		}
	}
	return res
}

// used is what the pod counts for in its node's memory: its usage, up to
// its limit.
func (ps *podState) used() float64 { return min(ps.usage, ps.lim) }

// evictionOrder orders two pods on a node under memory pressure as the
// kubelet ranks them for eviction (its eviction docs: whether usage exceeds
// the request, then priority, then usage above the request): a pod over its
// request before one that is not, then the one furthest above its request.
// Every pod here has the same priority.
func evictionOrder(a, b *podState) int {
	overA, overB := a.used() > a.req, b.used() > b.req
	switch {
	case overA && !overB:
		return -1
	case overB && !overA:
		return 1
	}
	byA, byB := a.used()-a.req, b.used()-b.req
	switch {
	case byA > byB:
		return -1
	case byA < byB:
		return 1
	}
	return 0
}

// nodeSize is the memory of a node added for a request: nodeMemory, or
// the smallest doubling of it that holds the request.
func nodeSize(nodeMemory, request float64) float64 {
	size := nodeMemory
	for size < request {
		size *= 2
	}
	return size
}

// packOrder is the order pods are placed and looked at in: by a hash of
// their names (after the salt, unless it is 0), ties by index.
func packOrder(pods []pod, salt int) []int {
	keys := make([]uint64, len(pods))
	order := make([]int, len(pods))
	for i, p := range pods {
		h := fnv.New64a()
		// A hash's Write never fails.
		if salt != 0 {
			_, _ = h.Write([]byte(strconv.Itoa(salt) + "/"))
		}
		_, _ = h.Write([]byte(p.series.Name))
		keys[i] = h.Sum64()
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case keys[a] < keys[b]:
			return -1
		case keys[a] > keys[b]:
			return 1
		}
		return a - b
	})
	return order
}

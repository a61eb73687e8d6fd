package autoscale

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/resize"
)

// gen draws workloads of every shape the controller meets: one to three
// containers, sidecars and classic init containers, requests only, limits
// only (defaulted as the apiserver does), both, Guaranteed, pod-level
// resources, every controlledValues, bounds, allowRestart and resize policy.
type gen struct{ r *rand.Rand }

var cpuSizes = []string{"10m", "50m", "100m", "250m", "500m", "1", "2", "4"}
var memSizes = []string{"16Mi", "64Mi", "128Mi", "256Mi", "512Mi", "1Gi", "4Gi"}

func (g gen) pick(xs []string) resource.Quantity { return resource.MustParse(xs[g.r.IntN(len(xs))]) }
func (g gen) chance(p float64) bool              { return g.r.Float64() < p }

// resources draws one container's cpu and memory entries.
func (g gen) resources(guaranteed bool) corev1.ResourceRequirements {
	rr := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		sizes := cpuSizes
		if r == corev1.ResourceMemory {
			sizes = memSizes
		}
		a, b := g.pick(sizes), g.pick(sizes)
		if a.Cmp(b) > 0 {
			a, b = b, a
		}
		switch {
		case guaranteed:
			rr.Requests[r], rr.Limits[r] = b, b
		default:
			switch g.r.IntN(5) {
			case 0: // neither
			case 1:
				rr.Requests[r] = a
			case 2: // a limit alone is defaulted into the request
				rr.Requests[r], rr.Limits[r] = b, b
			default:
				rr.Requests[r], rr.Limits[r] = a, b
			}
		}
	}
	return rr
}

func (g gen) container(name string, guaranteed bool) corev1.Container {
	c := corev1.Container{Name: name, Resources: g.resources(guaranteed)}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if g.chance(0.3) {
			c.ResizePolicy = append(c.ResizePolicy, corev1.ContainerResizePolicy{ResourceName: r, RestartPolicy: corev1.RestartContainer})
		}
	}
	return c
}

func (g gen) pod(i int) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "ns"},
		Spec: corev1.PodSpec{NodeName: "n1"}}
	guaranteed := g.chance(0.2)
	podLevel := g.chance(0.2)
	n := 1 + g.r.IntN(3)
	for j := range n {
		p.Spec.Containers = append(p.Spec.Containers, g.container(fmt.Sprintf("c%d", j), guaranteed && !podLevel))
	}
	if g.chance(0.3) {
		always := corev1.ContainerRestartPolicyAlways
		s := g.container("sidecar", guaranteed && !podLevel)
		s.RestartPolicy = &always
		p.Spec.InitContainers = append(p.Spec.InitContainers, s)
	}
	if g.chance(0.2) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, g.container("setup", guaranteed && !podLevel))
	}
	if podLevel {
		g.podLevel(p, guaranteed)
	}
	// The apiserver defaults what the pod was created with (a request from
	// a limit, a pod-level limit when every container has one); the planner
	// applies the same defaulting, and a no-change plan returns it.
	plan, err := resize.Plan(resize.Input{Pod: p, Server: v137})
	if err != nil {
		panic(err)
	}
	return plan.AfterPod()
}

// podLevel gives the pod consistent pod-level resources: requests at least
// the containers' sum, limits at least their largest limit.
func (g gen) podLevel(p *corev1.Pod, guaranteed bool) {
	pr := &corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if !guaranteed && g.chance(0.3) {
			continue
		}
		var hi resource.Quantity
		sum := resourcehelper.AggregateContainerRequests(p, resourcehelper.PodResourcesOptions{})[r]
		for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
			if q, ok := c.Resources.Limits[r]; ok && q.Cmp(hi) > 0 {
				hi = q
			}
		}
		sizes := cpuSizes
		if r == corev1.ResourceMemory {
			sizes = memSizes
		}
		req := g.pick(sizes)
		if req.Cmp(sum) < 0 {
			req = sum
		}
		pr.Requests[r] = req
		if guaranteed || g.chance(0.6) {
			lim := req.DeepCopy()
			if !guaranteed {
				lim.Add(g.pick(sizes))
			}
			if lim.Cmp(hi) < 0 {
				lim = hi
			}
			pr.Limits[r] = lim
			if guaranteed {
				pr.Requests[r] = lim
			}
		}
	}
	p.Spec.Resources = pr
}

func (g gen) spec() *v1alpha1.TailorPolicySpec {
	s := &v1alpha1.TailorPolicySpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}
	cp := v1alpha1.ContainerPolicy{ContainerName: "*"}
	if g.chance(0.5) {
		cp.ControlledValues = ptr(v1alpha1.ControlledValuesRequestsOnly)
	}
	switch g.r.IntN(4) {
	case 0:
		cp.ControlledResources = []corev1.ResourceName{corev1.ResourceCPU}
	case 1:
		cp.ControlledResources = []corev1.ResourceName{corev1.ResourceMemory}
	}
	if g.chance(0.3) {
		cp.AllowRestart = ptr(true)
	}
	if g.chance(0.4) {
		lo, hi := g.pick(cpuSizes), g.pick(cpuSizes)
		mlo, mhi := g.pick(memSizes), g.pick(memSizes)
		if lo.Cmp(hi) > 0 {
			lo, hi = hi, lo
		}
		if mlo.Cmp(mhi) > 0 {
			mlo, mhi = mhi, mlo
		}
		cp.MinAllowed = corev1.ResourceList{corev1.ResourceCPU: lo, corev1.ResourceMemory: mlo}
		cp.MaxAllowed = corev1.ResourceList{corev1.ResourceCPU: hi, corev1.ResourceMemory: mhi}
	}
	s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{cp}}
	if g.chance(0.2) {
		s.ResourcePolicy.ContainerPolicies = append(s.ResourcePolicy.ContainerPolicies,
			v1alpha1.ContainerPolicy{ContainerName: "c0", Mode: ptr(v1alpha1.ContainerModeOff)})
	}
	s.Behavior = &v1alpha1.Behavior{MaxConcurrentResizes: ptr(int32(1 + g.r.IntN(3)))}
	if g.chance(0.3) {
		s.Behavior.ScaleUp = &v1alpha1.ScaleUpRules{MaxStepPercent: ptr(int32(1 + g.r.IntN(200)))}
	}
	if g.chance(0.3) {
		s.Behavior.ScaleDown = &v1alpha1.ScaleDownRules{MaxStepPercent: ptr(int32(1 + g.r.IntN(100)))}
	}
	return s
}

// usage draws what the recommender and the metrics source said.
func (g gen) usage(p *corev1.Pod) PodInput {
	in := PodInput{Pod: p, Targets: map[string]Target{}, WorkingSet: map[string]resource.Quantity{}}
	names := []string{}
	for _, c := range runningContainers(p) {
		names = append(names, c.Name)
	}
	for _, n := range names {
		t := Target{}
		if g.chance(0.7) {
			t.CPU = resource.NewMilliQuantity(int64(1+g.r.IntN(5000)), resource.DecimalSI)
		}
		if g.chance(0.7) {
			t.Memory = resource.NewQuantity(int64(1+g.r.IntN(6<<10))<<20, resource.BinarySI)
		}
		in.Targets[n] = t
		if g.chance(0.8) {
			in.WorkingSet[n] = *resource.NewQuantity(int64(g.r.IntN(3<<10))<<20, resource.BinarySI)
		}
	}
	if g.chance(0.5) {
		in.PodTarget.CPU = resource.NewMilliQuantity(int64(1+g.r.IntN(8000)), resource.DecimalSI)
	}
	if g.chance(0.5) {
		in.PodTarget.Memory = resource.NewQuantity(int64(1+g.r.IntN(8<<10))<<20, resource.BinarySI)
	}
	in.InFlight = g.chance(0.1)
	if g.chance(0.2) {
		in.LastResize = now.Add(-time.Duration(g.r.IntN(120)) * time.Second)
	}
	return in
}

// checkAction holds every promise on one resize DecidePolicy chose.
func checkAction(spec *v1alpha1.TailorPolicySpec, in PodInput, a Action, floorHeadroom float64) []string {
	var bad []string
	before, plan := in.Pod, a.Plan
	if plan.Outcome != resize.Accepted {
		bad = append(bad, fmt.Sprintf("planner refuses it: %s %s", plan.Rule, plan.Message))
	}
	if plan.QoSBefore != plan.QoSAfter {
		bad = append(bad, fmt.Sprintf("QoS %s -> %s", plan.QoSBefore, plan.QoSAfter))
	}
	after := plan.AfterPod()
	for _, cc := range plan.Containers {
		pol, _ := spec.PolicyFor(cc.Name)
		if cc.Restart && !allowsRestart(pol) {
			bad = append(bad, fmt.Sprintf("container %s restarts (%s) without allowRestart", cc.Name, cc.RestartReason))
		}
		for r := range cc.After.Limits {
			if _, had := cc.Before.Limits[r]; !had {
				bad = append(bad, fmt.Sprintf("container %s gets a %s limit it did not have", cc.Name, r))
			}
		}
		if !cc.Changed {
			continue
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			bq, bok := cc.Before.Requests[r]
			aq := cc.After.Requests[r]
			if !bok || aq.Cmp(bq) == 0 {
				continue
			}
			if hi, ok := pol.MaxAllowed[r]; ok && aq.Cmp(bq) > 0 && aq.Cmp(hi) > 0 {
				bad = append(bad, fmt.Sprintf("container %s %s request raised to %s above maxAllowed %s", cc.Name, r, aq.String(), hi.String()))
			}
			if lo, ok := pol.MinAllowed[r]; ok && aq.Cmp(bq) < 0 && aq.Cmp(lo) < 0 {
				bad = append(bad, fmt.Sprintf("container %s %s request lowered to %s below minAllowed %s", cc.Name, r, aq.String(), lo.String()))
			}
		}
		bad = append(bad, memoryFloor(cc.Name, in.WorkingSet, cc.Before, cc.After, floorHeadroom)...)
	}
	if before.Spec.Resources != nil && after.Spec.Resources != nil {
		for r := range after.Spec.Resources.Limits {
			if _, had := before.Spec.Resources.Limits[r]; !had {
				bad = append(bad, fmt.Sprintf("pod-level %s limit added", r))
			}
		}
		if ws, ok := (Input{Pod: before, WorkingSet: in.WorkingSet}).podWorkingSet(); ok {
			bad = append(bad, memoryFloor(PodLevelName, map[string]resource.Quantity{PodLevelName: ws}, *before.Spec.Resources, *after.Spec.Resources, floorHeadroom)...)
		} else if lowered(*before.Spec.Resources, *after.Spec.Resources, corev1.ResourceMemory) {
			bad = append(bad, "pod-level memory lowered without every container's working set")
		}
	}
	return bad
}

// memoryFloor: memory lowered only with a known working set, and never
// below it plus headroom (or below what the unchanged limit allows).
func memoryFloor(name string, ws map[string]resource.Quantity, b, a corev1.ResourceRequirements, headroom float64) []string {
	if !lowered(b, a, corev1.ResourceMemory) {
		return nil
	}
	w, ok := ws[name]
	if !ok {
		return []string{fmt.Sprintf("%s memory lowered without a working set", name)}
	}
	floor := int64(float64(w.Value())*(1+headroom)) - 1<<20 // a MiB of rounding below a limit
	var bad []string
	for _, l := range []corev1.ResourceList{a.Requests, a.Limits} {
		if q, ok := l[corev1.ResourceMemory]; ok && q.Value() < floor {
			bad = append(bad, fmt.Sprintf("%s memory %s below working set %s + %.0f%%", name, q.String(), w.String(), headroom*100))
		}
	}
	return bad
}

func lowered(b, a corev1.ResourceRequirements, r corev1.ResourceName) bool {
	for _, pair := range [][2]corev1.ResourceList{{b.Requests, a.Requests}, {b.Limits, a.Limits}} {
		bq, bok := pair[0][r]
		aq, aok := pair[1][r]
		if bok && aok && aq.Cmp(bq) < 0 {
			return true
		}
	}
	return false
}

// TestDecidePolicyInvariants draws thousands of policies over pods of every
// shape and checks each resize DecidePolicy chooses against the promises:
// the planner accepts it, the QoS class stays, nothing restarts that the
// policy does not allow, no limit is added, bounds hold, memory is never
// lowered without a working set nor below it plus headroom, the node's room
// and maxConcurrentResizes hold.
func TestDecidePolicyInvariants(t *testing.T) {
	cases := 10000
	if testing.Short() {
		cases = 1000
	}
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(seed, 1))
	stats := map[string]int{}
	for i := range cases {
		caseSeed := r.Uint64()
		if msg := runInvariantCase(caseSeed, stats); msg != "" {
			t.Fatalf("case %d (seed %d): %s", i, caseSeed, msg)
		}
	}
	t.Logf("%d generated cases (seed %d): %d resizes checked, %d held, %d pod-level, %d requests-only", cases, seed,
		stats["resizes"], stats["held"], stats["podLevel"], stats["requestsOnly"])
	if stats["resizes"] < cases/4 {
		t.Errorf("only %d resizes in %d cases: the generator no longer exercises the decision", stats["resizes"], cases)
	}
}

func FuzzDecidePolicy(f *testing.F) {
	for i := range uint64(20) {
		f.Add(i)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		if msg := runInvariantCase(seed, map[string]int{}); msg != "" {
			t.Fatal(msg)
		}
	})
}

func runInvariantCase(seed uint64, stats map[string]int) string {
	g := gen{r: rand.New(rand.NewPCG(seed, 2))}
	spec := g.spec()
	var pods []PodInput
	var bound []*corev1.Pod
	for j := range 1 + g.r.IntN(3) {
		p := g.pod(j)
		bound = append(bound, p)
		pods = append(pods, g.usage(p))
	}
	// The node holds its pods (the scheduler put them there) and some room.
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(g.r.IntN(4000)), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(int64(g.r.IntN(8<<10))<<20, resource.BinarySI),
	}
	for _, p := range bound {
		for r, q := range resizeOwn(p) {
			if a, ok := alloc[r]; ok {
				a.Add(q)
				alloc[r] = a
			}
		}
	}
	node := &resize.NodeState{Allocatable: alloc, Pods: bound}
	in := PolicyInput{Spec: spec, Pods: pods, Nodes: map[string]*resize.NodeState{"n1": node},
		Server: v137, MemoryFloorHeadroom: 0.1, Now: now}
	d, err := DecidePolicy(in)
	if err != nil {
		return fmt.Sprintf("DecidePolicy: %v", err)
	}
	inFlight := 0
	for _, p := range pods {
		if p.InFlight {
			inFlight++
		}
	}
	if limit := MaxConcurrentResizes(spec) - inFlight; len(d.Resizes) > max(limit, 0) {
		return fmt.Sprintf("%d resizes with %d in flight and maxConcurrentResizes %d", len(d.Resizes), inFlight, MaxConcurrentResizes(spec))
	}
	room, _ := resize.Room(bound[0], node)
	var raised [2]int64
	for _, a := range d.Resizes {
		var in PodInput
		for _, p := range pods {
			if p.Pod.Name == a.Pod.Name {
				in = p
			}
		}
		if in.InFlight {
			return fmt.Sprintf("pod %s resized while in flight", a.Pod.Name)
		}
		if bad := checkAction(spec, in, a, 0.1); len(bad) > 0 {
			return fmt.Sprintf("pod %s: %s\npod: %s\ndecision: %s", a.Pod.Name, strings.Join(bad, "; "), podText(a.Pod), describeDesired(a.Decision))
		}
		need := a.Plan.Headroom.Needed
		own := resizeOwn(a.Pod)
		for i, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			n, o := need[r], own[r]
			if d := n.MilliValue() - o.MilliValue(); d > 0 {
				raised[i] += d
			}
		}
		stats["resizes"]++
		if a.Pod.Spec.Resources != nil {
			stats["podLevel"]++
		}
		if pol, _ := spec.PolicyFor("*"); !controlsLimits(pol) {
			stats["requestsOnly"]++
		}
	}
	for i, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		free := room[r]
		if raised[i] > free.MilliValue() {
			return fmt.Sprintf("raises of %s add %dm to the node's requests, %s was free", r, raised[i], free.String())
		}
	}
	stats["held"] += len(d.Held)
	for _, h := range d.Held {
		stats["held:"+string(h.Reason)+string(h.Rule)]++
		if h.Reason == HoldRefused {
			return fmt.Sprintf("pod %s: Decide chose what the planner refuses: %s\npod: %s\ndecision: %s\nnotes: %v", h.Pod.Name, h.Message, podText(h.Pod), describeDesired(h.Decision), notesOf(h.Decision))
		}
	}
	return ""
}

func podText(p *corev1.Pod) string {
	var b strings.Builder
	for _, c := range runningContainers(p) {
		fmt.Fprintf(&b, "%s req=%v lim=%v rp=%v; ", c.Name, c.Resources.Requests, c.Resources.Limits, c.ResizePolicy)
	}
	if p.Spec.Resources != nil {
		fmt.Fprintf(&b, "pod req=%v lim=%v", p.Spec.Resources.Requests, p.Spec.Resources.Limits)
	}
	return b.String()
}

// resizeOwn is the pod's requests as the node counts them now.
func resizeOwn(p *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{UseStatusResources: true, InPlacePodLevelResourcesVerticalScalingEnabled: true})
}

func notesOf(d Decision) []string {
	var out []string
	for _, ch := range d.All() {
		out = append(out, fmt.Sprintf("%s.%s req %s->%s lim %v->%v: %v", ch.Container, ch.Resource, ch.RequestBefore.String(), ch.RequestNow.String(), ch.LimitBefore, ch.LimitNow, ch.Notes))
	}
	return out
}

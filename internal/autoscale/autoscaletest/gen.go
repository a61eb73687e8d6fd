package autoscaletest

import (
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/ownership"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/resize"
)

// NodeName is the node every pod of a Case is bound to.
const NodeName = "n1"

// Case draws one DecidePolicy input from seed: a policy over one to three
// pods bound to NodeName, with their targets and working sets, and a node
// that holds them and some room. The server is Kubernetes 1.37 and the
// memory floor headroom 10%. The same seed gives the same case.
func Case(seed uint64) fleet.PolicyInput {
	g := gen{r: rand.New(rand.NewPCG(seed, 2))}
	spec := g.spec()
	var pods []fleet.PodInput
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
		for r, q := range resize.NodeRequests(p) {
			if a, ok := alloc[r]; ok {
				a.Add(q)
				alloc[r] = a
			}
		}
	}
	return fleet.PolicyInput{
		Spec:                spec,
		Pods:                pods,
		Nodes:               map[string]*resize.NodeState{NodeName: {Allocatable: alloc, Pods: bound}},
		Server:              server,
		MemoryFloorHeadroom: 0.1,
		Now:                 now,
		Holds:               g.holds(),
	}
}

// holds draws what a HorizontalPodAutoscaler scaling on utilization would
// hold: nothing in most cases, else a resource in every container, or in
// one container.
func (g gen) holds() ownership.Holds {
	var h ownership.Holds
	r := corev1.ResourceCPU
	if g.chance(0.3) {
		r = corev1.ResourceMemory
	}
	switch g.r.IntN(4) {
	case 0:
		h.All = map[corev1.ResourceName]bool{r: true}
	case 1:
		h.Containers = map[string]map[corev1.ResourceName]bool{fmt.Sprintf("c%d", g.r.IntN(2)): {r: true}}
	}
	return h
}

var (
	server = resize.Version{Major: 1, Minor: 37}
	now    = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
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

func ptr[T any](v T) *T { return &v }

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
		Spec: corev1.PodSpec{NodeName: NodeName}}
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
		// The apiserver refuses to create a classic init container that
		// restarts on resize (1.37): it may only say NotRequired.
		s := g.container("setup", guaranteed && !podLevel)
		for i := range s.ResizePolicy {
			s.ResizePolicy[i].RestartPolicy = corev1.NotRequired
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, s)
	}
	if podLevel {
		g.podLevel(p, guaranteed)
	}
	// The apiserver defaults what the pod was created with (a request from
	// a limit, a pod-level limit when every container has one); the planner
	// applies the same defaulting, and a no-change plan returns it.
	plan, err := resize.Plan(resize.Input{Pod: p, Server: server})
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
func (g gen) usage(p *corev1.Pod) fleet.PodInput {
	in := fleet.PodInput{Pod: p, Targets: map[string]podchange.Target{}, WorkingSet: map[string]resource.Quantity{}}
	for _, n := range podcontainers.Names(p) {
		t := podchange.Target{}
		if g.chance(0.7) {
			t.CPU = resource.NewMilliQuantity(int64(1+g.r.IntN(5000)), resource.DecimalSI)
		}
		if g.chance(0.7) {
			t.Memory = resource.NewQuantity(int64(1+g.r.IntN(6<<10))<<20, resource.BinarySI)
		}
		if g.chance(0.5) {
			// A limit advised apart (the recommender's MemorySplit): at or
			// above the request's target, or alone.
			lim := int64(1+g.r.IntN(8<<10)) << 20
			if t.Memory != nil {
				lim = max(lim, t.Memory.Value())
			}
			t.MemoryLimit = resource.NewQuantity(lim, resource.BinarySI)
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

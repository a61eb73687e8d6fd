package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	schedhelper "k8s.io/component-helpers/scheduling/corev1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/placement"
	"github.com/tailorhq/tailor/internal/controller/policy/store"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/resize"
)

// Fleet is the simulated cluster's shape: Nodes full nodes, each running
// one pod whose CPU demand rises past its request (the needy pod, of
// priority 1000 or 5000) beside Neighbours over-requested pods of mixed
// priorities (10, 100, 1000 or 5000), every pod under its own policy in
// mode InPlaceOrRecreate; and Spare empty nodes a recreated pod can land on.
type Fleet struct {
	Nodes, Neighbours, Spare int
	// Minutes of simulated time, a sync of every policy each Period.
	Minutes int
	Period  time.Duration
	// Startup is how long a recreated pod is down: evicted, scheduled,
	// pulled and started (a minute: an image already on the node, a
	// service ready quickly).
	Startup time.Duration
	Seed    uint64
}

// Arm is one way of meeting the fleet's raises.
type Arm string

const (
	// ArmRoom is tailor as it ships: room made in place by priority first.
	ArmRoom Arm = "room in place"
	// ArmRecreate is the same decisions with no room made (an empty room
	// board): what tailor did before, a raise held until its pod is
	// recreated elsewhere after recreateAfter, or its neighbours' own
	// stabilization windows end.
	ArmRecreate Arm = "recreate"
)

// Result is what one arm did to the fleet.
type Result struct {
	Arm Arm `json:"arm"`
	// Evictions are pods evicted for a replacement elsewhere.
	Evictions int `json:"evictions"`
	// ThrottledMinutes are the needy pods' minutes with their demand above
	// their CPU limit; DownMinutes those spent evicted and starting again.
	ThrottledMinutes float64 `json:"throttledMinutes"`
	DownMinutes      float64 `json:"downMinutes"`
	// RaisedInPlace are needy pods raised on their own node; RoomGiven
	// lowerings made early to make room; TakenFromHigher lowerings of a
	// pod for a needy pod of equal or lower priority (must be 0).
	RaisedInPlace   int `json:"raisedInPlace"`
	RoomGiven       int `json:"roomGiven"`
	TakenFromHigher int `json:"takenFromHigher"`
	// Overcommitted counts syncs that left a node's requests above its
	// allocatable (must be 0).
	Overcommitted int `json:"overcommitted"`
	// Needy is how many needy pods there were; NoRoomPossible those whose
	// neighbours are all of equal or higher priority.
	Needy          int `json:"needy"`
	NoRoomPossible int `json:"noRoomPossible"`
}

// simPod is a pod of the simulation and what drives it.
type simPod struct {
	pod    *corev1.Pod
	policy types.NamespacedName
	spec   *v1alpha1.TailorPolicySpec
	tmpl   *corev1.PodTemplateSpec
	needy  bool
	// demand is the CPU it wants, in cores, from rise on (before: base).
	base, demand float64
	rise         time.Duration
	lastResize   time.Time
	// downUntil is when a recreated pod runs again.
	downUntil time.Time
}

// policyState is what the controller's store keeps of a policy between
// syncs, for recreation.
type policyState struct {
	shortSince   map[types.UID]time.Time
	entries      map[types.UID]v1alpha1.Recreation
	lastEviction time.Time
}

// stabilization is the neighbours' scale-down window (the default): their
// lowering is held back until it ends, unless room is asked of them.
const stabilization = 15 * time.Minute

// Run simulates the fleet under arm.
func Run(f Fleet, arm Arm) (Result, error) {
	start := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	pods, nodes := build(f, start)
	res := Result{Arm: arm}
	for _, p := range pods {
		if !p.needy {
			continue
		}
		res.Needy++
		if !anyLower(p, pods) {
			res.NoRoomPossible++
		}
	}
	board := &store.RoomBoard{}
	states := map[types.NamespacedName]*policyState{}
	raised := map[types.UID]bool{}
	var throttled, down int
	for step := 1; step <= int(time.Duration(f.Minutes)*time.Minute/f.Period); step++ {
		now := start.Add(time.Duration(step) * f.Period)
		for _, sp := range pods {
			if now.Before(sp.downUntil) {
				continue
			}
			st := states[sp.policy]
			if st == nil {
				st = &policyState{shortSince: map[types.UID]time.Time{}, entries: map[types.UID]v1alpha1.Recreation{}}
				states[sp.policy] = st
			}
			in := syncInput(sp, nodes, now, st)
			if arm == ArmRoom {
				in.Room = autoscale.RoomInput{Policy: sp.policy, Asked: board.AskedOf([]*corev1.Pod{sp.pod}, now),
					Sought: board.Sought(now), Offers: board.Offers(nodes[sp.pod.Spec.NodeName], now),
					Asking: board.Asking([]*corev1.Pod{sp.pod}, now)}
			}
			d, wanted, err := autoscale.DecideSync(in)
			if err != nil {
				return res, fmt.Errorf("sync of %s at %s: %w", sp.policy, now.Sub(start), err)
			}
			if wanted != nil {
				if d, err = wanted.Decide(nodePods(nodes)); err != nil {
					return res, fmt.Errorf("recreation of %s at %s: %w", sp.policy, now.Sub(start), err)
				}
			}
			for _, s := range d.Sends {
				after := s.Plan.AdmittedPod()
				if sp.needy && cpuRequest(after) > cpuRequest(sp.pod) {
					raised[sp.pod.UID] = true
				}
				apply(sp, after, now)
			}
			for _, g := range d.Room.Given {
				res.RoomGiven++
				if g.Priority <= schedhelper.PodPriority(sp.pod) {
					res.TakenFromHigher++
				}
			}
			if arm == ArmRoom {
				post(board, sp, d, now, 2*f.Period)
			}
			if err := recreate(f, sp, d, st, nodes, now, &res); err != nil {
				return res, err
			}
		}
		for _, ps := range nodes {
			if over(ps) {
				res.Overcommitted++
			}
		}
		for _, sp := range pods {
			if !sp.needy {
				continue
			}
			switch {
			case now.Before(sp.downUntil):
				down++
			case sp.want(now) > cpuLimit(sp.pod):
				throttled++
			}
		}
	}
	res.ThrottledMinutes = float64(throttled) * f.Period.Minutes()
	res.DownMinutes = float64(down) * f.Period.Minutes()
	for _, sp := range pods {
		if sp.needy && raised[sp.pod.UID] && sp.downUntil.IsZero() {
			res.RaisedInPlace++
		}
	}
	return res, nil
}

// want is the CPU the pod's demand asks for at now, in cores.
func (sp *simPod) want(now time.Time) float64 {
	if sp.needy && now.Sub(sp.pod.CreationTimestamp.Time) >= sp.rise {
		return sp.demand
	}
	return sp.base
}

// syncInput is the sync of sp's policy (one pod each) as the controller
// gathers it: the recommendation (demand plus 15%, a lowering held by the
// stabilization window but offered early), the nodes of its pod, and its
// recreation state.
func syncInput(sp *simPod, nodes map[string][]*corev1.Pod, now time.Time, st *policyState) autoscale.SyncInput {
	pin := fleet.PodInput{Pod: sp.pod, LastResize: sp.lastResize,
		WorkingSet: map[string]resource.Quantity{"app": resource.MustParse("200Mi")}}
	target := podchange.Target{CPU: resource.NewMilliQuantity(int64(math.Ceil(sp.want(now)*1.15*100))*10, resource.DecimalSI)}
	switch cur := cpuRequest(sp.pod); {
	case target.CPU.MilliValue() > cur:
		pin.Targets = map[string]podchange.Target{"app": target}
		pin.RaiseSince = sp.pod.CreationTimestamp.Add(sp.rise)
	case target.CPU.MilliValue() < cur && now.Sub(sp.pod.CreationTimestamp.Time) < stabilization:
		pin.Early = map[string]podchange.Target{"app": target}
	case target.CPU.MilliValue() < cur:
		pin.Targets = map[string]podchange.Target{"app": target}
	}
	name := sp.pod.Spec.NodeName
	return autoscale.SyncInput{
		PolicyInput: fleet.PolicyInput{Spec: sp.spec, Pods: []fleet.PodInput{pin},
			Nodes:  map[string]*resize.NodeState{name: {Name: name, Allocatable: nodeAllocatable(), Pods: nodes[name]}},
			Server: resize.Version{Major: 1, Minor: 37}, MemoryFloorHeadroom: 0.1, Now: now},
		Template: sp.tmpl,
		Settle:   time.Second,
		Recreation: autoscale.RecreationState{RecreateAfter: 5 * time.Minute, ShortSince: st.shortSince,
			LastEviction: st.lastEviction, Entries: st.entries, Template: sp.tmpl, Generation: 1},
	}
}

// post is the controller's postRoom: offers, nodes sought, asks standing,
// and the asks of pods no longer short taken back.
func post(board *store.RoomBoard, sp *simPod, d *autoscale.SyncDecision, now time.Time, ttl time.Duration) {
	board.PostOffers(d.Room.Offers, now, ttl)
	board.Seek(d.Room.Seek, now, ttl)
	asking := false
	for _, a := range d.Room.Asks {
		if len(a.Asks) > 0 {
			asking = true
			board.PostAsks(a.Pod, a.Asks, now, ttl)
		}
	}
	if !asking {
		board.Withdraw(sp.pod.UID)
	}
}

// recreate carries out the sync's recreation steps: an entry recorded, a
// pod evicted (down for Startup, then running at the recorded size on a
// spare node), runs of shortfall started and ended.
func recreate(f Fleet, sp *simPod, d *autoscale.SyncDecision, st *policyState, nodes map[string][]*corev1.Pod, now time.Time, res *Result) error {
	for _, s := range d.Settled {
		delete(st.shortSince, s.Pod.UID)
	}
	for _, s := range d.Recreate {
		st.shortSince[s.Pod.UID] = s.ShortSince
		switch s.Step {
		case placement.RecreateRecord:
			st.entries[s.Owner.UID] = v1alpha1.Recreation{OwnerUID: string(s.Owner.UID), EvictedPod: s.Pod.Name,
				EvictionTime: metav1.NewTime(now), ObservedGeneration: s.Generation, Containers: s.Containers}
		case placement.RecreateEvict:
			res.Evictions++
			st.lastEviction = now
			delete(st.shortSince, s.Pod.UID)
			delete(st.entries, s.Owner.UID)
			if err := move(f, sp, s.Containers, nodes, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// move replaces sp's pod by one with containers' resources on the first
// spare node with room, down until f.Startup has passed.
func move(f Fleet, sp *simPod, containers []v1alpha1.RecreatedContainer, nodes map[string][]*corev1.Pod, now time.Time) error {
	old := sp.pod
	nodes[old.Spec.NodeName] = slices.DeleteFunc(nodes[old.Spec.NodeName], func(p *corev1.Pod) bool { return p.UID == old.UID })
	p := old.DeepCopy()
	p.UID = old.UID + "-r"
	p.Name = old.Name + "-r"
	for _, rc := range containers {
		for i := range p.Spec.Containers {
			if p.Spec.Containers[i].Name == rc.Name {
				p.Spec.Containers[i].Resources = corev1.ResourceRequirements{Requests: rc.Requests, Limits: rc.Limits}
			}
		}
	}
	settle(p)
	p.Spec.NodeName = ""
	for i := range f.Spare {
		name := fmt.Sprintf("spare-%d", i)
		if fits(nodes[name], p) {
			p.Spec.NodeName = name
			nodes[name] = append(nodes[name], p)
			break
		}
	}
	if p.Spec.NodeName == "" {
		return fmt.Errorf("no spare node has room for %s's replacement (%dm): give the fleet more (--spare)", old.Name, cpuRequest(p))
	}
	sp.pod, sp.downUntil, sp.lastResize = p, now.Add(f.Startup), time.Time{}
	// The replacement starts demanding what the old pod did by then.
	sp.rise = 0
	p.CreationTimestamp = metav1.NewTime(now)
	return nil
}

// apply is the kubelet taking a resize: spec and status both at after.
func apply(sp *simPod, after *corev1.Pod, now time.Time) {
	for i := range sp.pod.Spec.Containers {
		sp.pod.Spec.Containers[i].Resources = *after.Spec.Containers[i].Resources.DeepCopy()
	}
	settle(sp.pod)
	sp.lastResize = now
}

// settle makes the pod's status what its spec asks: allocated and running.
func settle(p *corev1.Pod) {
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		r := c.Resources.DeepCopy()
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Ready: true,
			AllocatedResources: r.Requests, Resources: r,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: p.CreationTimestamp}}})
	}
}

// anyLower says whether a neighbour of p is of lower priority.
func anyLower(p *simPod, pods []*simPod) bool {
	for _, o := range pods {
		if o != p && o.pod.Spec.NodeName == p.pod.Spec.NodeName && schedhelper.PodPriority(o.pod) < schedhelper.PodPriority(p.pod) {
			return true
		}
	}
	return false
}

func cpuRequest(p *corev1.Pod) int64 {
	return p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
}

// cpuLimit is the pod's CPU limit, in cores.
func cpuLimit(p *corev1.Pod) float64 {
	return float64(p.Spec.Containers[0].Resources.Limits.Cpu().MilliValue()) / 1000
}

// Every node, fleet or spare, has 4 cores and 16 GiB.
func nodeAllocatable() corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
}

// requested is the CPU the pods request, in millicores.
func requested(pods []*corev1.Pod) int64 {
	var sum int64
	for _, p := range pods {
		sum += cpuRequest(p)
	}
	return sum
}

// nodeCPU is a node's allocatable CPU, in millicores.
func nodeCPU() int64 {
	a := nodeAllocatable()
	return a.Cpu().MilliValue()
}

// fits says whether p fits beside pods on a node; over, whether pods
// request more than a node has.
func fits(pods []*corev1.Pod, p *corev1.Pod) bool {
	return requested(pods)+cpuRequest(p) <= nodeCPU()
}

func over(pods []*corev1.Pod) bool {
	return requested(pods) > nodeCPU()
}

// nodePods is every node with its pods, for placing a replacement.
func nodePods(nodes map[string][]*corev1.Pod) []placement.NodePods {
	names := make([]string, 0, len(nodes))
	for name := range nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]placement.NodePods, 0, len(names))
	for _, name := range names {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: nodeAllocatable(),
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
		out = append(out, placement.NodePods{Node: n, Pods: nodes[name]})
	}
	return out
}

// build draws the fleet: its pods, in the order their policies sync, and
// the pods on each node.
func build(f Fleet, start time.Time) ([]*simPod, map[string][]*corev1.Pod) {
	r := rand.New(rand.NewPCG(f.Seed, 38))
	nodes := map[string][]*corev1.Pod{}
	var pods []*simPod
	mk := func(node, name string, prio int32, needy bool) *simPod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name, UID: types.UID(name), Labels: map[string]string{"app": name},
				CreationTimestamp: metav1.NewTime(start),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name + "-rs",
					UID: types.UID(name + "-rs"), Controller: ptr(true)}}},
			Spec: corev1.PodSpec{NodeName: node, Priority: ptr(prio), Containers: []corev1.Container{{Name: "app",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.QOSClass = corev1.PodQOSBurstable
		p.Status.StartTime = &p.CreationTimestamp
		settle(p)
		tmpl := &corev1.PodTemplateSpec{Spec: *p.Spec.DeepCopy()}
		tmpl.Spec.NodeName = ""
		spec := &v1alpha1.TailorPolicySpec{
			TargetRef:    &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			UpdatePolicy: &v1alpha1.UpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlaceOrRecreate},
			ResourcePolicy: &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{ContainerName: "*",
				ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
				MaxAllowed:          corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}},
		}
		nodes[node] = append(nodes[node], p)
		return &simPod{pod: p, policy: types.NamespacedName{Namespace: "fleet", Name: name}, spec: spec, tmpl: tmpl, needy: needy}
	}
	for i := range f.Nodes {
		node := fmt.Sprintf("node-%d", i)
		needy := mk(node, fmt.Sprintf("needy-%d", i), []int32{1000, 5000}[r.IntN(2)], true)
		needy.base = 0.5
		needy.demand = 1.3 + r.Float64()*1.1
		needy.rise = time.Duration(1+r.IntN(10)) * time.Minute
		pods = append(pods, needy)
		for j := range f.Neighbours {
			n := mk(node, fmt.Sprintf("neighbour-%d-%d", i, j), []int32{10, 100, 1000, 5000}[r.IntN(4)], false)
			n.base = 0.04 + r.Float64()*0.36
			pods = append(pods, n)
		}
	}
	for i := range f.Spare {
		nodes[fmt.Sprintf("spare-%d", i)] = nil
	}
	r.Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
	return pods, nodes
}

func ptr[T any](v T) *T { return &v }

package autoscale_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/autoscaletest"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/ownership"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/propertytest"
	"github.com/tailorhq/tailor/internal/resize"
)

// checkAction holds every promise on one resize DecidePolicy chose.
func checkAction(spec *v1alpha1.TailorPolicySpec, in fleet.PodInput, a fleet.Action, floorHeadroom float64) []string {
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
		bad = append(bad, checkBounds(pol, cc.Name, cc.Before, cc.After)...)
		bad = append(bad, memoryFloor(cc.Name, in.WorkingSet, cc.Before, cc.After, floorHeadroom)...)
	}
	if before.Spec.Resources != nil && after.Spec.Resources != nil {
		for r := range after.Spec.Resources.Limits {
			if _, had := before.Spec.Resources.Limits[r]; !had {
				bad = append(bad, fmt.Sprintf("pod-level %s limit added", r))
			}
		}
		if ws, ok := podWorkingSet(before, in.WorkingSet); ok {
			bad = append(bad, memoryFloor(podcontainers.PodLevelName, map[string]resource.Quantity{podcontainers.PodLevelName: ws}, *before.Spec.Resources, *after.Spec.Resources, floorHeadroom)...)
		} else if lowered(*before.Spec.Resources, *after.Spec.Resources, corev1.ResourceMemory) {
			bad = append(bad, "pod-level memory lowered without every container's working set")
		}
	}
	return bad
}

// checkBounds: a request the decision moved is raised no higher than
// maxAllowed and lowered no lower than minAllowed (a value already beyond a
// bound may stay there).
func checkBounds(pol v1alpha1.ContainerPolicy, name string, b, a corev1.ResourceRequirements) []string {
	var bad []string
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		bq, bok := b.Requests[r]
		aq := a.Requests[r]
		if !bok || aq.Cmp(bq) == 0 {
			continue
		}
		if hi, ok := pol.MaxAllowed[r]; ok && aq.Cmp(bq) > 0 && aq.Cmp(hi) > 0 {
			bad = append(bad, fmt.Sprintf("container %s %s request raised to %s above maxAllowed %s", name, r, aq.String(), hi.String()))
		}
		if lo, ok := pol.MinAllowed[r]; ok && aq.Cmp(bq) < 0 && aq.Cmp(lo) < 0 {
			bad = append(bad, fmt.Sprintf("container %s %s request lowered to %s below minAllowed %s", name, r, aq.String(), lo.String()))
		}
	}
	return bad
}

// memoryFloor: memory lowered only with a known working set, and never
// below it plus headroom (or below what the unchanged limit allows). Only
// the values that went down are judged: a request held for an HPA, or
// raised to maxAllowed, may stay below the working set while a
// LimitRange's max lowers the limit.
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
	for _, l := range [][2]corev1.ResourceList{{b.Requests, a.Requests}, {b.Limits, a.Limits}} {
		b, had := l[0][corev1.ResourceMemory]
		if q, ok := l[1][corev1.ResourceMemory]; ok && q.Value() < floor && (!had || q.Cmp(b) < 0) {
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
// and maxConcurrentResizes hold. Most cases are in a namespace with
// LimitRanges and quotas (autoscaletest.Namespaced): there every resize,
// admission entry and recreation entry must also get through them
// (checkNamespaced).
//
// The cases are shared among GOMAXPROCS workers: the gate runs it under
// -race, where one goroutine takes several times as long.
func TestDecidePolicyInvariants(t *testing.T) {
	stats, cases, seed, took := propertytest.Run(t, 1, runInvariantCase)
	t.Logf("%d generated cases (seed %d) in %s: %d resizes checked, %d replacements checked, %d held, %d pod-level, %d requests-only, %d limits sized under an HPA's held request", cases, seed,
		took.Round(time.Millisecond), stats["resizes"], stats["replacements"], stats["held"], stats["podLevel"], stats["requestsOnly"], stats["heldRequests"])
	t.Logf("namespace rules in %d cases: %d resizes checked against them (%d clamped into a LimitRange, %d held for them); "+
		"%d admission entries checked (%d with rules, %d capped by a LimitRange, %d within a node's room, %d boosted; %d not written for them); "+
		"%d recreation entries checked (%d held for them)",
		stats["withRules"], stats["nsResizes"], stats["clamped"], stats["nsHeld"],
		stats["entries"], stats["entriesWithRules"], stats["entriesClamped"], stats["entriesRoom"], stats["boosted"], stats["entriesHeld"],
		stats["recreations"], stats["recreationsHeld"])
	propertytest.CheckFloors(t, stats, cases, policyFloors)
}

// policyFloors are half the least of five runs of 10,000 cases of different
// seeds (that least in the comment): a decision that held back half of what
// it sends, in place or for new pods, fails them. Until issue #23's audit
// those under the namespace's rules were a five-hundredth of the cases (20
// in 10,000), which a decision holding nearly everything under them met.
var policyFloors = []propertytest.Floor{
	{Stat: "resizes", Per10k: 2040, Why: "resizes are held back that should be sent"},                                      // 4094
	{Stat: "replacements", Per10k: 5700, Why: "the generator no longer draws pods a replacement would size"},               // 11412
	{Stat: "heldRequests", Per10k: 166, Why: "the generator no longer exercises HPA holds"},                                // 332
	{Stat: "withRules", Per10k: 2970, Why: "the generator no longer draws namespaces with rules"},                          // 5940
	{Stat: "nsResizes", Per10k: 800, Why: "resizes within the namespace's rules are held back"},                            // 1602
	{Stat: "clamped", Per10k: 22, Why: "resizes are no longer clamped into a LimitRange"},                                  // 45
	{Stat: "nsHeld", Per10k: 1840, Why: "the generator no longer draws resizes the namespace's rules hold"},                // 3688
	{Stat: "entries", Per10k: 2100, Why: "admission entries are held back that should be written"},                         // 4204
	{Stat: "entriesWithRules", Per10k: 1300, Why: "admission entries within the namespace's rules are held back"},          // 2600
	{Stat: "entriesClamped", Per10k: 278, Why: "admission entries are no longer clamped into a LimitRange"},                // 557
	{Stat: "entriesRoom", Per10k: 1170, Why: "admission entries are no longer cut to a node's room"},                       // 2343
	{Stat: "boosted", Per10k: 451, Why: "new pods are not boosted"},                                                        // 902
	{Stat: "entriesHeld", Per10k: 63, Why: "the generator no longer draws entries the namespace's rules refuse"},           // 126
	{Stat: "recreations", Per10k: 360, Why: "recreation entries are held back that should be recorded"},                    // 720
	{Stat: "recreationsHeld", Per10k: 1830, Why: "the generator no longer draws recreations the namespace's rules refuse"}, // 3668
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
	nc := autoscaletest.Namespaced(seed)
	input := nc.PolicyInput
	spec, pods := input.Spec, input.Pods
	d, err := fleet.DecidePolicy(input)
	if err != nil {
		return fmt.Sprintf("DecidePolicy: %v", err)
	}
	if msg := checkPolicyDecision(input, d, stats); msg != "" {
		return msg
	}
	// What a replacement would be created with (InPlaceOrRecreate): the
	// whole recommendation, no room counted, under the same promises.
	for _, p := range pods {
		full, err := podchange.Decide(podchange.Input{Pod: p.Pod, Spec: spec, Targets: p.Targets, PodTarget: p.PodTarget,
			WorkingSet: p.WorkingSet, MemoryFloorHeadroom: input.MemoryFloorHeadroom, Now: input.Now, Holds: input.Holds})
		if err != nil {
			return fmt.Sprintf("Decide for a replacement of %s: %v", p.Pod.Name, err)
		}
		if full.Empty() {
			continue
		}
		plan, err := resize.Plan(resize.Input{Pod: p.Pod, Desired: full.Desired, Server: input.Server})
		if err != nil {
			return fmt.Sprintf("Plan for a replacement of %s: %v", p.Pod.Name, err)
		}
		action := fleet.Action{Pod: p.Pod, Decision: full, Plan: plan}
		if bad := append(checkAction(spec, p, action, input.MemoryFloorHeadroom), checkHolds(input.Holds, action)...); len(bad) > 0 {
			return fmt.Sprintf("replacement of %s: %s\npod: %s\ndecision: %s", p.Pod.Name, strings.Join(bad, "; "), podText(p.Pod), describeDesired(full))
		}
		stats["replacements"]++
	}
	return checkNamespaced(nc, d, stats)
}

// checkPolicyDecision holds the promises of the in-place resizes of one
// sync (DecidePolicy): no more in flight than maxConcurrentResizes allows,
// no pod resized while its last resize is in flight, each resize as
// checkAction and checkHolds want it, the raises on each node within its
// room, and nothing chosen that the planner refuses.
func checkPolicyDecision(input fleet.PolicyInput, d fleet.PolicyDecision, stats map[string]int) string {
	spec, pods := input.Spec, input.Pods
	inFlight := 0
	for _, p := range pods {
		if p.InFlight {
			inFlight++
		}
	}
	if limit := fleet.MaxConcurrentResizes(spec) - inFlight; len(d.Resizes) > max(limit, 0) {
		return fmt.Sprintf("%d resizes with %d in flight and maxConcurrentResizes %d", len(d.Resizes), inFlight, fleet.MaxConcurrentResizes(spec))
	}
	// What the raises add to each node's requests.
	raised := map[string]*[2]int64{}
	for _, a := range d.Resizes {
		var in fleet.PodInput
		for _, p := range pods {
			if p.Pod.Name == a.Pod.Name {
				in = p
			}
		}
		if in.InFlight {
			return fmt.Sprintf("pod %s resized while in flight", a.Pod.Name)
		}
		bad := checkAction(spec, in, a, input.MemoryFloorHeadroom)
		bad = append(bad, checkHolds(input.Holds, a)...)
		if len(bad) > 0 {
			return fmt.Sprintf("pod %s: %s\npod: %s\ndecision: %s", a.Pod.Name, strings.Join(bad, "; "), podText(a.Pod), describeDesired(a.Decision))
		}
		need := a.Plan.Headroom.Needed
		own := resizeOwn(a.Pod)
		node := a.Pod.Spec.NodeName
		if raised[node] == nil {
			raised[node] = &[2]int64{}
		}
		for i, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			n, o := need[r], own[r]
			if d := n.MilliValue() - o.MilliValue(); d > 0 {
				raised[node][i] += d
			}
		}
		stats["resizes"]++
		for _, ch := range a.Decision.All() {
			if ch.RequestHeld {
				stats["heldRequests"]++
			}
		}
		if a.Pod.Spec.Resources != nil {
			stats["podLevel"]++
		}
		if pol, _ := spec.PolicyFor("*"); !controlsLimits(pol) {
			stats["requestsOnly"]++
		}
	}
	for name, up := range raised {
		node := input.Nodes[name]
		if node == nil {
			return fmt.Sprintf("resized a pod on node %s, which is not known", name)
		}
		room, _ := resize.Room(node.Pods[0], node)
		for i, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			free := room[r]
			if up[i] > free.MilliValue() {
				return fmt.Sprintf("raises of %s add %dm to node %s's requests, %s was free", r, up[i], name, free.String())
			}
		}
	}
	stats["held"] += len(d.Held)
	for _, h := range d.Held {
		stats["held:"+string(h.Reason)+string(h.Rule)]++
		if h.Reason == fleet.HoldRefused {
			return fmt.Sprintf("pod %s: Decide chose what the planner refuses: %s\npod: %s\ndecision: %s\nnotes: %v", h.Pod.Name, h.Message, podText(h.Pod), describeDesired(h.Decision), notesOf(h.Decision))
		}
	}
	return ""
}

func podText(p *corev1.Pod) string {
	var b strings.Builder
	for _, c := range podcontainers.Running(&p.Spec) {
		fmt.Fprintf(&b, "%s req=%s lim=%s rp=%v; ", c.Name, listText(c.Resources.Requests), listText(c.Resources.Limits), c.ResizePolicy)
	}
	if p.Spec.Resources != nil {
		fmt.Fprintf(&b, "pod req=%s lim=%s", listText(p.Spec.Resources.Requests), listText(p.Spec.Resources.Limits))
	}
	return b.String()
}

// listText is a resource list's cpu and memory, readably.
func listText(l corev1.ResourceList) string {
	var parts []string
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := l[r]; ok {
			parts = append(parts, string(r)+":"+q.String())
		}
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// resizeOwn is the pod's requests as the node counts them now.
func resizeOwn(p *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{UseStatusResources: true, InPlacePodLevelResourcesVerticalScalingEnabled: true})
}

func notesOf(d podchange.Decision) []string {
	var out []string
	for _, ch := range d.All() {
		out = append(out, fmt.Sprintf("%s.%s req %s->%s lim %v->%v: %v", ch.Container, ch.Resource, ch.RequestBefore.String(), ch.RequestNow.String(), ch.LimitBefore, ch.LimitNow, ch.Notes))
	}
	return out
}

func describeDesired(d podchange.Decision) string {
	s := ""
	for _, ch := range d.All() {
		s += fmt.Sprintf("%s.%s=%s;", ch.Container, ch.Resource, ch.RequestNow.String())
	}
	return s
}

// podWorkingSet is the running containers' working sets summed, known only
// when every one of them is.
func podWorkingSet(p *corev1.Pod, ws map[string]resource.Quantity) (resource.Quantity, bool) {
	var sum resource.Quantity
	for _, c := range podcontainers.Running(&p.Spec) {
		w, ok := ws[c.Name]
		if !ok {
			return resource.Quantity{}, false
		}
		sum.Add(w)
	}
	return sum, true
}

func allowsRestart(pol v1alpha1.ContainerPolicy) bool {
	return pol.AllowRestart != nil && *pol.AllowRestart
}

func controlsLimits(pol v1alpha1.ContainerPolicy) bool {
	return pol.ControlledValues == nil || *pol.ControlledValues == v1alpha1.ControlledValuesRequestsAndLimits
}

// checkHolds: a request an HPA divides by never moves, in a container or
// at the pod level.
func checkHolds(h ownership.Holds, a fleet.Action) []string {
	var bad []string
	for _, cc := range a.Plan.Containers {
		bad = append(bad, heldMoved(h, cc.Name, cc.Before, cc.After)...)
	}
	if pl := a.Plan.PodLevel; pl != nil && pl.Before != nil && pl.After != nil {
		for r := range h.All {
			b, n := pl.Before.Requests[r], pl.After.Requests[r]
			if b.Cmp(n) != 0 {
				bad = append(bad, fmt.Sprintf("pod-level %s request %s -> %s is held for the HPA", r, b.String(), n.String()))
			}
		}
	}
	return bad
}

// heldMoved: no request of the container an HPA divides by moved.
func heldMoved(h ownership.Holds, name string, b, a corev1.ResourceRequirements) []string {
	var bad []string
	for r := range b.Requests {
		bq, aq := b.Requests[r], a.Requests[r]
		if h.Holds(name, r) && bq.Cmp(aq) != 0 {
			bad = append(bad, fmt.Sprintf("container %s %s request %s -> %s is held for the HPA", name, r, bq.String(), aq.String()))
		}
	}
	return bad
}

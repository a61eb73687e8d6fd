package autoscale_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/autoscale/autoscaletest"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/resize"
)

// checkAction holds every promise on one resize DecidePolicy chose.
func checkAction(spec *v1alpha1.TailorPolicySpec, in autoscale.PodInput, a autoscale.Action, floorHeadroom float64) []string {
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
	stats, cases, seed, took := runCases(t, 1, runInvariantCase)
	t.Logf("%d generated cases (seed %d) in %s: %d resizes checked, %d replacements checked, %d held, %d pod-level, %d requests-only, %d limits sized under an HPA's held request", cases, seed,
		took.Round(time.Millisecond), stats["resizes"], stats["replacements"], stats["held"], stats["podLevel"], stats["requestsOnly"], stats["heldRequests"])
	t.Logf("namespace rules in %d cases: %d resizes checked against them (%d clamped into a LimitRange, %d held for them); "+
		"%d admission entries checked (%d with rules, %d capped by a LimitRange, %d within a node's room, %d boosted; %d not written for them); "+
		"%d recreation entries checked (%d held for them)",
		stats["withRules"], stats["nsResizes"], stats["clamped"], stats["nsHeld"],
		stats["entries"], stats["entriesWithRules"], stats["entriesClamped"], stats["entriesRoom"], stats["boosted"], stats["entriesHeld"],
		stats["recreations"], stats["recreationsHeld"])
	checkFloors(t, stats, cases, policyFloors)
}

// propertyCases is how many generated cases a whole-decision property test
// runs: 10,000; 2,000 under the race detector, as make check runs them (the
// decision is pure, and its workers share nothing but the seeds and the
// first failure, so -race checks the harness); 1,000 with -short. The
// 2,000 are the first of the same 10,000 seeds; make explore runs 10,000
// of new ones.
func propertyCases() int {
	switch {
	case testing.Short():
		return 1000
	case raceDetector:
		return 2000
	}
	return 10000
}

// runCases runs propertyCases generated cases of run, on GOMAXPROCS
// workers, each from its own seed drawn from propertySeed on stream;
// it fails the test on the first failing case, naming its seed (which
// replays it), and returns the cases' summed stats, how many ran, the seed
// and how long they took.
func runCases(t *testing.T, stream uint64, run func(seed uint64, stats map[string]int) string) (map[string]int, int, uint64, time.Duration) {
	t.Helper()
	return runN(t, propertyCases(), stream, run)
}

// defaultPropertySeed draws the gate's cases: the same every run, so
// that a test which passed passes again on the same code, and a case that
// fails names its own seed, which the test's Seeds list then keeps.
const defaultPropertySeed = 20261128

// propertySeed is the seed the generated cases are drawn from:
// TAILOR_PROPERTY_SEED when set (a number replays a run; "clock" draws
// new cases, as make explore does to look further), else
// defaultPropertySeed.
func propertySeed(t *testing.T) uint64 {
	t.Helper()
	switch v := os.Getenv("TAILOR_PROPERTY_SEED"); v {
	case "":
		return defaultPropertySeed
	case "clock":
		seed := uint64(time.Now().UnixNano())
		t.Logf("TAILOR_PROPERTY_SEED=%d replays these cases", seed)
		return seed
	default:
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("TAILOR_PROPERTY_SEED=%q: want a number or \"clock\"", v)
		}
		return seed
	}
}

// runN is runCases for a given number of cases.
func runN(t *testing.T, cases int, stream uint64, run func(seed uint64, stats map[string]int) string) (map[string]int, int, uint64, time.Duration) {
	t.Helper()
	seed := propertySeed(t)
	r := rand.New(rand.NewPCG(seed, stream))
	seeds := make([]uint64, cases)
	for i := range seeds {
		seeds[i] = r.Uint64()
	}
	start := time.Now()
	workers := runtime.GOMAXPROCS(0)
	failures := make([]string, cases)
	perWorker := make([]map[string]int, workers)
	var failed atomic.Bool
	var wg sync.WaitGroup
	for w := range workers {
		perWorker[w] = map[string]int{}
		wg.Go(func() {
			for i := w; i < cases && !failed.Load(); i += workers {
				if msg := run(seeds[i], perWorker[w]); msg != "" {
					failures[i] = msg
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	for i, msg := range failures {
		if msg != "" {
			t.Fatalf("case %d (seed %d): %s", i, seeds[i], msg)
		}
	}
	stats := map[string]int{}
	for _, m := range perWorker {
		for k, v := range m {
			stats[k] += v
		}
	}
	return stats, cases, seed, time.Since(start)
}

// floor is the least a stat must reach per 10,000 cases: a decision that
// holds back what it should send (every resize, entry and recreation held
// would still keep every promise), or a generator that no longer draws
// what it should, fails the fuzz.
type floor struct {
	stat   string
	per10k int
	why    string
}

// checkFloors fails the test for each stat below its floor, scaled to the
// cases run. The floors are half of what 10,000 cases gave. Drawn from the
// clock, the rarest of them at 2,000 cases (a handful of counts) would
// spread below half now and then; drawn from propertySeed, the same code
// draws the same counts, so a run of 2,000 is held to them too, and a
// change that moves one below its floor fails every time, not by chance.
func checkFloors(t *testing.T, s map[string]int, cases int, floors []floor) {
	t.Helper()
	if cases < 2000 {
		t.Logf("floors not checked at %d cases: the rarest are a few counts there", cases)
		return
	}
	for _, f := range floors {
		min := cases * f.per10k / 10000
		if got := s[f.stat]; got < min {
			t.Errorf("%s: %d in %d cases, want at least %d: %s", f.stat, got, cases, min, f.why)
		}
	}
}

// policyFloors are half the least of five runs of 10,000 cases of different
// seeds (that least in the comment): a decision that held back half of what
// it sends, in place or for new pods, fails them. Until issue #23's audit
// those under the namespace's rules were a five-hundredth of the cases (20
// in 10,000), which a decision holding nearly everything under them met.
var policyFloors = []floor{
	{"resizes", 2040, "resizes are held back that should be sent"},                                      // 4094
	{"replacements", 5700, "the generator no longer draws pods a replacement would size"},               // 11412
	{"heldRequests", 166, "the generator no longer exercises HPA holds"},                                // 332
	{"withRules", 2970, "the generator no longer draws namespaces with rules"},                          // 5940
	{"nsResizes", 800, "resizes within the namespace's rules are held back"},                            // 1602
	{"clamped", 22, "resizes are no longer clamped into a LimitRange"},                                  // 45
	{"nsHeld", 1840, "the generator no longer draws resizes the namespace's rules hold"},                // 3688
	{"entries", 2100, "admission entries are held back that should be written"},                         // 4204
	{"entriesWithRules", 1300, "admission entries within the namespace's rules are held back"},          // 2600
	{"entriesClamped", 278, "admission entries are no longer clamped into a LimitRange"},                // 557
	{"entriesRoom", 1170, "admission entries are no longer cut to a node's room"},                       // 2343
	{"boosted", 451, "new pods are not boosted"},                                                        // 902
	{"entriesHeld", 63, "the generator no longer draws entries the namespace's rules refuse"},           // 126
	{"recreations", 360, "recreation entries are held back that should be recorded"},                    // 720
	{"recreationsHeld", 1830, "the generator no longer draws recreations the namespace's rules refuse"}, // 3668
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
	d, err := autoscale.DecidePolicy(input)
	if err != nil {
		return fmt.Sprintf("DecidePolicy: %v", err)
	}
	if msg := checkPolicyDecision(input, d, stats); msg != "" {
		return msg
	}
	// What a replacement would be created with (InPlaceOrRecreate): the
	// whole recommendation, no room counted, under the same promises.
	for _, p := range pods {
		full, err := autoscale.Decide(autoscale.Input{Pod: p.Pod, Spec: spec, Targets: p.Targets, PodTarget: p.PodTarget,
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
		action := autoscale.Action{Pod: p.Pod, Decision: full, Plan: plan}
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
func checkPolicyDecision(input autoscale.PolicyInput, d autoscale.PolicyDecision, stats map[string]int) string {
	spec, pods := input.Spec, input.Pods
	inFlight := 0
	for _, p := range pods {
		if p.InFlight {
			inFlight++
		}
	}
	if limit := autoscale.MaxConcurrentResizes(spec) - inFlight; len(d.Resizes) > max(limit, 0) {
		return fmt.Sprintf("%d resizes with %d in flight and maxConcurrentResizes %d", len(d.Resizes), inFlight, autoscale.MaxConcurrentResizes(spec))
	}
	// What the raises add to each node's requests.
	raised := map[string]*[2]int64{}
	for _, a := range d.Resizes {
		var in autoscale.PodInput
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
		if h.Reason == autoscale.HoldRefused {
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

func notesOf(d autoscale.Decision) []string {
	var out []string
	for _, ch := range d.All() {
		out = append(out, fmt.Sprintf("%s.%s req %s->%s lim %v->%v: %v", ch.Container, ch.Resource, ch.RequestBefore.String(), ch.RequestNow.String(), ch.LimitBefore, ch.LimitNow, ch.Notes))
	}
	return out
}

func describeDesired(d autoscale.Decision) string {
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
func checkHolds(h autoscale.Holds, a autoscale.Action) []string {
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
func heldMoved(h autoscale.Holds, name string, b, a corev1.ResourceRequirements) []string {
	var bad []string
	for r := range b.Requests {
		bq, aq := b.Requests[r], a.Requests[r]
		if h.Holds(name, r) && bq.Cmp(aq) != 0 {
			bad = append(bad, fmt.Sprintf("container %s %s request %s -> %s is held for the HPA", name, r, bq.String(), aq.String()))
		}
	}
	return bad
}

package replay

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// stepSeries is a series with one sample per packing step for n steps,
// memory mem(i) GiB.
func stepSeries(name string, n int, mem func(i int) float64) *Series {
	s := &Series{Name: name}
	for i := range n {
		s.Samples = append(s.Samples, Sample{Time: t0.Add(time.Duration(i) * packStep), CPU: 1, Memory: mem(i) * gib})
	}
	return s
}

// gibPlan is a plan entry in GiB.
func gibPlan(at int, request, limit float64) plan {
	return plan{at: int32(at), request: float32(request * gib), limit: float32(limit * gib)}
}

func TestPackEvictions(t *testing.T) {
	far := t0.Add(1000 * time.Hour)
	cases := map[string]struct {
		pods          []pod
		split         time.Time
		wantEvictions [][2]int
		wantNodes     float64
	}{
		"usage over the node evicts the pod furthest above its request": {
			// Both on one 4 GiB node by their 2 GiB requests; at step 5
			// they use 2.5 and 2.8 GiB: 5.3 GiB, one eviction, charged to
			// the one 0.8 GiB above its request.
			pods: []pod{
				{stepSeries("a", 10, func(i int) float64 { return map[bool]float64{true: 2.5, false: 1}[i == 5] }), []plan{gibPlan(0, 2, 3)}},
				{stepSeries("b", 10, func(i int) float64 { return map[bool]float64{true: 2.8, false: 1}[i == 5] }), []plan{gibPlan(0, 2, 3)}},
			},
			split:         far,
			wantEvictions: [][2]int{{0, 0}, {1, 0}},
			// b is recreated on a node of its own, not on the node under
			// pressure: one node for steps 0-5, two for 6-9.
			wantNodes: (6*1 + 4*2) / 10.0,
		},
		"the kubelet evicts until the node fits, furthest above its request first": {
			// On one 4 GiB node by their requests of 2, 1 and 1 GiB. At
			// step 3 they use 2.5, 1.9 and 1.6: 6 GiB. q, 0.9 GiB above
			// its request, goes first; 4.1 GiB is still too much, so r,
			// 0.6 above, goes next. p, using the most but only 0.5 above
			// its request, stays. q and r are recreated on a second node.
			pods: []pod{
				{stepSeries("p", 10, func(i int) float64 { return map[bool]float64{true: 2.5, false: 1}[i == 3] }), []plan{gibPlan(0, 2, 4)}},
				{stepSeries("q", 10, func(i int) float64 { return map[bool]float64{true: 1.9, false: 0.5}[i == 3] }), []plan{gibPlan(0, 1, 4)}},
				{stepSeries("r", 10, func(i int) float64 { return map[bool]float64{true: 1.6, false: 0.5}[i == 3] }), []plan{gibPlan(0, 1, 4)}},
			},
			split:         far,
			wantEvictions: [][2]int{{0, 0}, {1, 0}, {1, 0}},
			wantNodes:     (4*1 + 6*2) / 10.0,
		},
		"a pod at its request goes after one above it, however much it uses": {
			// p uses its whole 3 GiB request, q 0.5 GiB above its 1:
			// 4.5 GiB on the 4 GiB node, and q is evicted.
			pods: []pod{
				{stepSeries("p", 10, func(i int) float64 { return map[bool]float64{true: 3, false: 1}[i == 3] }), []plan{gibPlan(0, 3, 4)}},
				{stepSeries("q", 10, func(i int) float64 { return map[bool]float64{true: 1.5, false: 0.5}[i == 3] }), []plan{gibPlan(0, 1, 4)}},
			},
			split:         far,
			wantEvictions: [][2]int{{0, 0}, {1, 0}},
			wantNodes:     (4*1 + 6*2) / 10.0,
		},
		"a container counts up to its limit": {
			// 5 GiB over a 3 GiB limit is an OOM kill, not node usage:
			// 3 + 1 GiB fits the node.
			pods: []pod{
				{stepSeries("a", 10, func(i int) float64 { return map[bool]float64{true: 5, false: 1}[i == 5] }), []plan{gibPlan(0, 2, 3)}},
				{stepSeries("b", 10, func(int) float64 { return 1 }), []plan{gibPlan(0, 2, 3)}},
			},
			split:         far,
			wantEvictions: [][2]int{{0, 0}, {0, 0}},
			wantNodes:     1,
		},
		"an evicted pod is recreated elsewhere; evictions by half": {
			// a and b share a 4 GiB node. At step 2 they use 2.5 + 2 GiB:
			// a, above its request, is evicted and recreated on a second
			// node. At step 7, after the split at step 5, a alone uses
			// 4.5 GiB of it: evicted again, it goes back beside b. Nodes:
			// one for steps 0-2, two for 3-7, one for 8-9.
			pods: []pod{
				{stepSeries("a", 10, func(i int) float64 {
					return map[int]float64{2: 2.5, 7: 4.5}[i] + map[bool]float64{true: 1}[i != 2 && i != 7]
				}), []plan{gibPlan(0, 2, 5)}},
				{stepSeries("b", 10, func(i int) float64 { return map[bool]float64{true: 2, false: 1}[i == 2] }), []plan{gibPlan(0, 2, 4)}},
			},
			split:         t0.Add(5 * packStep),
			wantEvictions: [][2]int{{1, 1}, {0, 0}},
			wantNodes:     (3*1 + 5*2 + 2*1) / 10.0,
		},
		"a raise that does not fit moves the pod": {
			// b's raise to 3 GiB at step 3 does not fit beside a's 2: b
			// moves to a node of its own, so their 3.5 + 3 GiB at step 6
			// are on two nodes. Nodes: 1 for steps 0-2, 2 for 3-9.
			pods: []pod{
				{stepSeries("a", 10, func(i int) float64 { return map[bool]float64{true: 3.5, false: 1}[i == 6] }), []plan{gibPlan(0, 2, 4)}},
				{stepSeries("b", 10, func(i int) float64 { return map[bool]float64{true: 3, false: 1}[i == 6] }), []plan{gibPlan(0, 2, 4), gibPlan(3, 3, 4)}},
			},
			split:         far,
			wantEvictions: [][2]int{{0, 0}, {0, 0}},
			wantNodes:     (3*1 + 7*2) / 10.0,
		},
		"a raise that fits stays in place": {
			// a is lowered to 1 GiB at step 1, so b's raise to 3 GiB fits
			// beside it: at step 6 they use 3.5 + 3 GiB on one node, and
			// a, 2.5 GiB above its request, is evicted.
			pods: []pod{
				{stepSeries("a", 10, func(i int) float64 { return map[bool]float64{true: 3.5, false: 1}[i == 6] }), []plan{gibPlan(0, 2, 4), gibPlan(1, 1, 4)}},
				{stepSeries("b", 10, func(i int) float64 { return map[bool]float64{true: 3, false: 1}[i == 6] }), []plan{gibPlan(0, 2, 4), gibPlan(3, 3, 4)}},
			},
			split:         far,
			wantEvictions: [][2]int{{1, 0}, {0, 0}},
			// a is recreated on a second node for steps 7-9.
			wantNodes: (7*1 + 3*2) / 10.0,
		},
		"a pod larger than a node gets one of twice the size, which others share": {
			pods: []pod{
				{stepSeries("a", 10, func(int) float64 { return 5 }), []plan{gibPlan(0, 6, 6)}},
				{stepSeries("b", 10, func(int) float64 { return 1 }), []plan{gibPlan(0, 1, 1)}},
			},
			split:         far,
			wantEvictions: [][2]int{{0, 0}, {0, 0}},
			wantNodes:     1,
		},
		"a series that ends leaves; one that starts later joins": {
			// a runs steps 0-4, b from step 5 (its plan starts there):
			// one node throughout, never both.
			pods: []pod{
				{stepSeries("a", 5, func(int) float64 { return 3 }), []plan{gibPlan(0, 3, 3)}},
				{stepSeries("b", 10, func(int) float64 { return 3 }), []plan{gibPlan(5, 3, 3)}},
			},
			split:         far,
			wantEvictions: [][2]int{{0, 0}, {0, 0}},
			wantNodes:     1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := pack(tc.pods, 4*gib, tc.split, 0)
			if diff := cmp.Diff(tc.wantEvictions, res.evictions); diff != "" {
				t.Errorf("evictions (-want,+got):\n%s", diff)
			}
			var nt nodeTally
			for _, h := range res.nodes {
				nt.steps += h.steps
				nt.nodeSteps += h.nodeSteps
			}
			if got := nt.nodeSteps / float64(nt.steps); got != tc.wantNodes {
				t.Errorf("mean nodes = %v, want %v", got, tc.wantNodes)
			}
		})
	}
}

func TestPackCarriesUsageThroughShortGaps(t *testing.T) {
	// a's sample at step 3 is its last before a gap: its 3 GiB (its whole
	// request) stands for usageCarry, steps 4-6, then a uses nothing. b,
	// 1 GiB requested beside it on a 4 GiB node, uses 2 GiB at one step:
	// at step 6 that passes the node with a's carried usage and b is
	// evicted; at step 7 a counts no more.
	for spike, want := range map[int]int{6: 1, 7: 0} {
		t.Run(strconv.Itoa(spike), func(t *testing.T) {
			a := stepSeries("a", 20, func(int) float64 { return 3 })
			a.Samples = append(a.Samples[:4], a.Samples[15:]...)
			b := stepSeries("b", 20, func(i int) float64 { return map[bool]float64{true: 2, false: 1}[i == spike] })
			res := pack([]pod{{a, []plan{gibPlan(0, 3, 4)}}, {b, []plan{gibPlan(0, 1, 4)}}}, 4*gib, t0.Add(time.Hour), 0)
			if diff := cmp.Diff([][2]int{{0, 0}, {want, 0}}, res.evictions); diff != "" {
				t.Errorf("evictions (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestNodeSize(t *testing.T) {
	for req, want := range map[float64]float64{0: 4, 3: 4, 4: 4, 4.5: 8, 8: 8, 9: 16, 33: 64} {
		if got := nodeSize(4*gib, req*gib); got != want*gib {
			t.Errorf("nodeSize(4 GiB, %g GiB) = %g GiB, want %g", req, got/gib, want)
		}
	}
}

// randomPods draws n pods of random usage and plans.
func randomPods(rng *rand.Rand, n int, ratio float64) []pod {
	pods := make([]pod, n)
	for i := range pods {
		steps := 50 + rng.IntN(100)
		s := stepSeries(strconv.Itoa(i), steps, func(int) float64 { return 0.1 + 3*rng.Float64() })
		// Some samples are missing memory, some are missing altogether.
		for j := range s.Samples {
			if rng.IntN(10) == 0 {
				s.Samples[j].Memory = math.NaN()
			}
		}
		s.Samples = s.Samples[rng.IntN(10):]
		var pl []plan
		at := rng.IntN(5)
		for at < len(s.Samples) {
			req := 0.1 + 5*rng.Float64()
			pl = append(pl, gibPlan(at, req, req*ratio))
			at += 1 + rng.IntN(20)
		}
		pods[i] = pod{s, pl}
	}
	return pods
}

func TestPackProperties(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 1))
		ratio := 1 + float64(rng.IntN(3))
		pods := randomPods(rng, 1+rng.IntN(30), ratio)
		split := t0.Add(time.Duration(rng.IntN(150)) * packStep)
		salt := rng.IntN(3)
		got := pack(pods, 4*gib, split, salt)
		// Deterministic, and the same whatever order the pods come in.
		if again := pack(pods, 4*gib, split, salt); !cmp.Equal(got, again, cmp.AllowUnexported(packResult{}, nodeTally{})) {
			t.Fatalf("seed %d: two packings differ", seed)
		}
		perm := rng.Perm(len(pods))
		shuffled := make([]pod, len(pods))
		for i, j := range perm {
			shuffled[i] = pods[j]
		}
		other := pack(shuffled, 4*gib, split, salt)
		for i, j := range perm {
			if other.evictions[i] != got.evictions[j] {
				t.Fatalf("seed %d: pod %s evicted %v in one order, %v in another", seed, pods[j].series.Name, got.evictions[j], other.evictions[i])
			}
		}
		if other.nodes != got.nodes {
			t.Fatalf("seed %d: nodes %v in one order, %v in another", seed, got.nodes, other.nodes)
		}
		// Another salt places the same pods in another order: the same
		// steps are counted, whatever the nodes.
		if salted := pack(pods, 4*gib, split, salt+1); salted.nodes[0].steps != got.nodes[0].steps || salted.nodes[1].steps != got.nodes[1].steps {
			t.Fatalf("seed %d: salt %d counts %v steps, salt %d %v", seed, salt+1, salted.nodes, salt, got.nodes)
		}
		// With limits equal to requests no node can come under pressure:
		// that holds only if no node is ever given more requests than
		// its memory.
		if ratio == 1 {
			for i, e := range got.evictions {
				if e != [2]int{} {
					t.Fatalf("seed %d: pod %d evicted %v with limits equal to requests", seed, i, e)
				}
			}
		}
	}
}

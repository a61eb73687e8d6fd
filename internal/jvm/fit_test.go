package jvm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/internal/propertytest"
)

func TestJudgeFit(t *testing.T) {
	q := func(s string) resource.Quantity { return resource.MustParse(s) }
	qp := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	java := func(opts ...string) Heap {
		return HeapOf(&corev1.Container{Command: append([]string{"java"}, append(opts, "-jar", "app.jar")...)})
	}
	type want struct {
		Reason         FitReason
		HeapMax, Reach string
		Limit          string
		Suggested      string
		SuggestedHeap  string
	}
	cases := map[string]struct {
		in   FitInput
		want want
	}{
		"not a JVM": {
			in: FitInput{Heap: HeapOf(&corev1.Container{Command: []string{"redis-server"}}), Limit: q("2Gi")},
		},
		"no limit: nothing to judge": {
			in: FitInput{Heap: java("-Xmx256m")},
		},
		"-Xmx well under its limit": {
			in: FitInput{Heap: java("-Xmx256m"), Limit: q("2Gi"), WorkingSet: qp("150Mi"), Needed: q("400Mi")},
			// reach 256+64+64 = 384Mi; the largest heap whose reach is
			// 2Gi: (2048-64)*4/5 = 1587.2Mi.
			want: want{Reason: FitWasted, HeapMax: "256Mi", Reach: "384Mi", Limit: "2Gi", Suggested: "-Xmx1587m", SuggestedHeap: "1587Mi"},
		},
		"-Xmx at its limit's reach: nothing to say": {
			in: FitInput{Heap: java("-Xmx256m"), Limit: q("384Mi")},
		},
		"a lowering on its way to the reach: nothing to say": {
			in: FitInput{Heap: java("-Xmx256m"), Limit: q("2Gi"), WorkingSet: qp("150Mi"), Needed: q("400Mi"), Lowers: true},
		},
		"a lowering on its way to what the recommendation asks, still far above the reach": {
			in:   FitInput{Heap: java("-Xmx256m"), Limit: q("2Gi"), WorkingSet: qp("150Mi"), Needed: q("1Gi"), Lowers: true},
			want: want{Reason: FitWasted, HeapMax: "256Mi", Reach: "384Mi", Limit: "1Gi", Suggested: "-Xmx768m", SuggestedHeap: "768Mi"},
		},
		"a lowering that stops at a heap sized from the limit: the limit as it is": {
			in:   FitInput{Heap: java(), Limit: q("2Gi"), StartLimit: q("2Gi"), Needed: q("400Mi"), Lowers: true},
			want: want{Reason: FitWasted, HeapMax: "512Mi", Reach: "704Mi", Limit: "2Gi", Suggested: "-XX:MaxRAMPercentage=77", SuggestedHeap: "1653562408"},
		},
		"a limit above the reach by the recommender's margin only": {
			// 600Mi - 384Mi = 216Mi, under 256Mi.
			in: FitInput{Heap: java("-Xmx256m"), Limit: q("600Mi"), WorkingSet: qp("200Mi"), Needed: q("380Mi")},
		},
		"the default 25% of the limit it started under": {
			in: FitInput{Heap: java(), Limit: q("2Gi"), StartLimit: q("2Gi")},
			// heap 512Mi, reach 704Mi; a heap of 1587.2Mi is 77.5% of 2Gi.
			want: want{Reason: FitWasted, HeapMax: "512Mi", Reach: "704Mi", Limit: "2Gi", Suggested: "-XX:MaxRAMPercentage=77", SuggestedHeap: "1653562408"},
		},
		"a share of an unknown limit at start, unmeasured: nothing known": {
			in: FitInput{Heap: java("-XX:MaxRAMPercentage=50"), Limit: q("2Gi")},
		},
		"a share of the limit, measured": {
			in: FitInput{Heap: java("-XX:MaxRAMPercentage=50"), Limit: q("4Gi"), Measured: &Measured{HeapMax: 1 << 30, NonHeap: 100 << 20}},
			// measured reach max(1124+32, 1124/0.9) = 1248.9Mi. The heap
			// for 4Gi: min((4096-64)*0.8, 4096*0.9-100) = 3225.6Mi, 78%.
			want: want{Reason: FitWasted, HeapMax: "1Gi", Reach: "1309554916", Limit: "4Gi", Suggested: "-XX:MaxRAMPercentage=78", SuggestedHeap: "3350074490"},
		},
		"measured, the spec showing no JVM: given -Xmx": {
			in: FitInput{Measured: &Measured{HeapMax: 256 << 20, NonHeap: 64 << 20}, Limit: q("2Gi")},
			// measured reach (256+64)/0.9 = 355.6Mi.
			want: want{Reason: FitWasted, HeapMax: "256Mi", Reach: "372827023", Limit: "2Gi", Suggested: "-Xmx1587m", SuggestedHeap: "1587Mi"},
		},
		"a full heap the recommendation outgrows": {
			in: FitInput{Heap: java("-XX:MaxHeapSize=512m"), Limit: q("800Mi"), WorkingSet: qp("600Mi"), Needed: q("1Gi")},
			// reach 704Mi; the heap for 1Gi: (1024-64)*0.8 = 768Mi.
			want: want{Reason: FitHeapFull, HeapMax: "512Mi", Reach: "704Mi", Limit: "1Gi", Suggested: "-XX:MaxHeapSize=768m", SuggestedHeap: "768Mi"},
		},
		"a full heap the recommendation asks a little more for: not worth a restart": {
			// the heap for 760Mi is (760-64)*0.8 = 556Mi, less than a
			// tenth above 512Mi.
			in: FitInput{Heap: java("-Xmx512m"), Limit: q("720Mi"), WorkingSet: qp("600Mi"), Needed: q("760Mi")},
		},
		"a heap not full, the recommendation above its reach: the margin, not a need": {
			in: FitInput{Heap: java("-Xmx512m"), Limit: q("800Mi"), WorkingSet: qp("400Mi"), Needed: q("1Gi")},
		},
		"options from a ConfigMap, unmeasured": {
			in: FitInput{Heap: HeapOf(&corev1.Container{Command: []string{"java", "Main"}, Env: []corev1.EnvVar{{Name: "JAVA_TOOL_OPTIONS",
				ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "opts"}}}}}), Limit: q("2Gi"), StartLimit: q("2Gi")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := JudgeFit(tc.in)
			got := want{Reason: f.Reason, Suggested: f.Suggested}
			if f.Reason != "" {
				got.HeapMax, got.Reach, got.Limit, got.SuggestedHeap = f.HeapMax.String(), f.Reach.String(), f.Limit.String(), f.SuggestedHeap.String()
				if f.Message == "" {
					t.Error("no message")
				}
				t.Log(f.Message)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

// TestJudgeFitProperties: over generated JVMs (a fixed heap of either
// option, a share of the limit, options the spec does not show), measured
// or not, at any limit, working set and recommendation, whatever JudgeFit
// suggests gives a heap whose reach, by the spec's estimate and by the
// non-heap measured, is not above the limit the suggestion is for, and
// which is at least that limit less what the search steps by; it is never
// above the limit; the option read back from the spec gives that heap;
// and a suggestion is only made for a heap it grows.
func TestJudgeFitProperties(t *testing.T) {
	stats, cases, seed, took := propertytest.Run(t, 36, checkJudgeFit)
	t.Logf("%d generated cases (seed %d) in %s: %v", cases, seed, took, stats)
	if stats[string(FitWasted)] == 0 || stats[string(FitHeapFull)] == 0 || stats["percent"] == 0 || stats["size"] == 0 || stats["none"] == 0 {
		t.Errorf("the generator no longer reaches every kind of advice: %v", stats)
	}
}

func checkJudgeFit(seed uint64, stats map[string]int) string {
	r := rand.New(rand.NewPCG(seed, 36))
	mi := func(lo, hi int) int64 { return int64(lo+r.IntN(hi-lo+1)) << 20 }
	qty := func(b int64) resource.Quantity { return *resource.NewQuantity(b, resource.BinarySI) }
	limit := mi(32, 64<<10)
	c := &corev1.Container{Command: []string{"java"}}
	switch r.IntN(4) {
	case 0:
		c.Command = append(c.Command, fmt.Sprintf("-Xmx%dm", mi(16, 32<<10)>>20))
	case 1:
		c.Env = []corev1.EnvVar{{Name: "JAVA_TOOL_OPTIONS", Value: fmt.Sprintf("-XX:MaxHeapSize=%dk", mi(16, 32<<10)>>10)}}
	case 2:
		c.Command = append(c.Command, fmt.Sprintf("-XX:MaxRAMPercentage=%d.%d", 1+r.IntN(99), r.IntN(10)))
	default:
		c.Command = []string{"/app/start"}
	}
	in := FitInput{Heap: HeapOf(c), Limit: qty(limit)}
	if r.IntN(2) == 0 {
		in.StartLimit = qty(mi(32, 64<<10))
	}
	if r.IntN(2) == 0 || !in.Heap.JVM {
		in.Measured = &Measured{HeapMax: mi(1, 32<<10), NonHeap: mi(0, 4<<10)}
	}
	if r.IntN(4) > 0 {
		ws := qty(mi(1, 64<<10))
		in.WorkingSet = &ws
	}
	if r.IntN(4) > 0 {
		in.Needed = qty(mi(1, 64<<10))
	}
	in.Lowers = r.IntN(3) == 0
	f := JudgeFit(in)
	if f.Reason == "" {
		stats["none"]++
		return ""
	}
	stats[string(f.Reason)]++
	target := f.Limit.Value()
	// A lowering on its way is judged where it heads: never above the
	// limit, never under the reach nor what the recommendation asks.
	if in.Lowers && in.Needed.Sign() > 0 {
		if _, _, _, known := ReachOf(in.Heap, in.Measured); known {
			limit = min(limit, max(in.Needed.Value(), f.Reach.Value()))
		}
	}
	if target < limit || (f.Reason == FitWasted && target != limit) || (f.Reason == FitHeapFull && target != max(limit, in.Needed.Value())) {
		return fmt.Sprintf("%s sized for %d, limit %d, needed %s", f.Reason, target, limit, in.Needed.String())
	}
	heap := f.SuggestedHeap.Value()
	reach := Reach(f.SuggestedHeap)
	if in.Measured != nil {
		if mr := MeasuredReach(Measured{HeapMax: heap, NonHeap: in.Measured.NonHeap}); mr.Cmp(reach) > 0 {
			reach = mr
		}
	}
	if reach.Value() > target {
		return fmt.Sprintf("%s: heap %d reaches %d, above the %d it is for", f.Suggested, heap, reach.Value(), target)
	}
	if heap <= f.HeapMax.Value() {
		return fmt.Sprintf("%s: heap %d does not grow %s", f.Suggested, heap, f.HeapMax.String())
	}
	// The option, put in the spec, reads back as the heap said.
	back := HeapOf(&corev1.Container{Command: []string{"java", f.Suggested}})
	if pct, ok := Percentage(back); ok {
		stats["percent"]++
		if got := int64(float64(target) * pct / 100); got != heap {
			return fmt.Sprintf("%s of %d is %d, not the %d said", f.Suggested, target, got, heap)
		}
		// A whole percent less than the heap the limit holds.
		if best := largestHeap(target, in.Measured); heap < best-target/100-1 {
			return fmt.Sprintf("%s gives %d, the limit holds %d", f.Suggested, heap, best)
		}
	} else {
		stats["size"]++
		if back.Max == nil || back.Max.Value() != heap {
			return fmt.Sprintf("%s reads back as %v, not %d", f.Suggested, back.Max, heap)
		}
		// The largest whole MiB: one more would reach above the limit.
		next := Reach(*resource.NewQuantity(heap+1<<20, resource.BinarySI))
		over := next.Value() > target
		if in.Measured != nil {
			mr := MeasuredReach(Measured{HeapMax: heap + 1<<20, NonHeap: in.Measured.NonHeap})
			over = over || mr.Value() > target
		}
		if !over {
			return fmt.Sprintf("%s: a heap a MiB larger still fits %d", f.Suggested, target)
		}
	}
	return ""
}

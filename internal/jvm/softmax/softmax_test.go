package softmax

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tailorhq/tailor/internal/propertytest"
)

const mi = 1 << 20

func TestDecide(t *testing.T) {
	type want struct {
		Target, SoftMax int64
		Set             bool
	}
	for name, tc := range map[string]struct {
		in   Input
		want want
	}{
		// 1Gi limit: headroom 102.4Mi; 1024-100-102.4 = 821.6 -> 820Mi.
		"raised limit, bound follows up": {
			in:   Input{Limit: 1024 * mi, HeapMax: 2048 * mi, NonHeap: 100 * mi, Current: 400 * mi},
			want: want{Target: 820 * mi, SoftMax: 820 * mi, Set: true},
		},
		"never above the heap's maximum": {
			in:   Input{Limit: 4096 * mi, HeapMax: 512 * mi, NonHeap: 100 * mi, Current: 256 * mi},
			want: want{Target: 512 * mi, SoftMax: 512 * mi, Set: true},
		},
		"no limit: the heap's maximum": {
			in:   Input{HeapMax: 512 * mi, NonHeap: 100 * mi, Current: 512 * mi},
			want: want{Target: 512 * mi, SoftMax: 512 * mi},
		},
		"lowered limit, bound lowered by any amount": {
			in:   Input{Limit: 1024 * mi, HeapMax: 2048 * mi, NonHeap: 100 * mi, Current: 822 * mi},
			want: want{Target: 820 * mi, SoftMax: 820 * mi, Set: true},
		},
		"a small raise waits": {
			in:   Input{Limit: 1024 * mi, HeapMax: 2048 * mi, NonHeap: 100 * mi, Current: 810 * mi},
			want: want{Target: 820 * mi, SoftMax: 810 * mi},
		},
		"small limit: headroom is 32Mi": {
			in:   Input{Limit: 200 * mi, HeapMax: 512 * mi, NonHeap: 50 * mi},
			want: want{Target: 118 * mi, SoftMax: 118 * mi, Set: true},
		},
		"no heap fits: as low as it goes": {
			in:   Input{Limit: 100 * mi, HeapMax: 512 * mi, NonHeap: 60 * mi, Current: 512 * mi},
			want: want{SoftMax: MinSoftMax, Set: true},
		},
		"no heap fits, already at the least": {
			in:   Input{Limit: 100 * mi, HeapMax: 512 * mi, NonHeap: 60 * mi, Current: MinSoftMax},
			want: want{SoftMax: MinSoftMax},
		},
		"a heap smaller than the least": {
			in:   Input{Limit: 1024 * mi, HeapMax: 8 * mi, NonHeap: 60 * mi},
			want: want{Target: 8 * mi, SoftMax: 8 * mi, Set: true},
		},
		"heap max unknown": {in: Input{Limit: 100 * mi}, want: want{}},
	} {
		t.Run(name, func(t *testing.T) {
			d := Decide(tc.in)
			t.Log(d.Reason)
			if diff := cmp.Diff(tc.want, want{Target: d.Target, SoftMax: d.SoftMax, Set: d.Set}); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

// Over generated limits, heaps, non-heaps and current bounds: a bound set
// or kept fits the limit beside the non-heap and the headroom, is never
// above the heap's maximum, and the target never falls as the limit rises.
func TestDecideProperties(t *testing.T) {
	stats, cases, seed, took := propertytest.Run(t, 36, func(seed uint64, stats map[string]int) string {
		r := rand.New(rand.NewPCG(seed, 0))
		size := func(hi int64) int64 { return r.Int64N(hi) }
		in := Input{HeapMax: 1 + size(16<<30), NonHeap: size(2 << 30), Current: size(17 << 30)}
		if r.IntN(10) > 0 {
			in.Limit = 1 + size(32<<30)
		}
		if r.IntN(3) == 0 {
			// Near its target, where a raise may wait a step.
			if t := Decide(Input{Limit: in.Limit, HeapMax: in.HeapMax, NonHeap: in.NonHeap}).Target; t > 0 {
				in.Current = max(1, t-size(2*RaiseStep)+RaiseStep/2)
			}
		}
		d := Decide(in)
		after := in.Current
		if !d.Set && d.Target > 0 {
			stats["kept"]++
		}
		if d.Set {
			after = d.SoftMax
			stats["set"]++
			if d.SoftMax < in.Current {
				stats["lowered"]++
			}
		}
		if d.Target == 0 {
			stats["no fit"]++
			if lowest := min(MinSoftMax, in.HeapMax); after > lowest {
				return fmt.Sprintf("%+v: no fit, and the bound is left at %d, above the least %d", in, after, lowest)
			}
		} else {
			if after > d.Target {
				return fmt.Sprintf("%+v: bound %d above its target %d", in, after, d.Target)
			}
			if after > in.HeapMax {
				return fmt.Sprintf("%+v: bound %d above the heap's maximum", in, after)
			}
			if in.Limit > 0 && after+in.NonHeap+Headroom(in.Limit) > in.Limit {
				return fmt.Sprintf("%+v: bound %d + non-heap + headroom %d pass the limit", in, after, Headroom(in.Limit))
			}
			if d.Set && d.SoftMax < MinSoftMax {
				return fmt.Sprintf("%+v: bound %d under the least", in, d.SoftMax)
			}
		}
		if in.Limit > 0 {
			more := in
			more.Limit += 1 + size(4<<30)
			if up := Decide(more); up.Target < d.Target {
				return fmt.Sprintf("%+v: target %d at limit %d, %d at the higher %d", in, d.Target, in.Limit, up.Target, more.Limit)
			}
		}
		return ""
	})
	t.Logf("%d cases (seed %d) in %s: %v", cases, seed, took, stats)
	propertytest.CheckFloors(t, stats, cases, []propertytest.Floor{
		{Stat: "set", Per10k: 2000, Why: "a decision that never sets passes the rest"},
		{Stat: "lowered", Per10k: 1000, Why: "lowerings are the case that needs the invariant"},
		{Stat: "no fit", Per10k: 100, Why: "the no-fit branch must be drawn"},
		{Stat: "kept", Per10k: 500, Why: "a bound within a step of its target is kept: drawn near it"},
	})
}

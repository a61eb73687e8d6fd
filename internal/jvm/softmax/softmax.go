package softmax

import (
	"fmt"
	"math"
)

const (
	// Granule is what a soft bound is rounded down to: ZGC's heap granule
	// (2MiB). Rounding keeps a non-heap figure that jitters by a few KiB
	// from moving the bound, and attaching to the JVM, at every read.
	Granule = 2 << 20
	// MinHeadroom and HeadroomShare make the headroom left under the limit
	// beside the heap's bound and the measured non-heap: the larger of
	// 32MiB and a tenth of the limit. It covers what grows between two
	// reads (threads started, direct buffers, the collector's own
	// structures as the heap fills, metaspace as classes load) and what no
	// measure catches; the tenth is the agent's own memory margin (a
	// working set within 10% of its limit is at risk).
	MinHeadroom   = 32 << 20
	HeadroomShare = 0.10
	// MinSoftMax is the least bound set (or the heap's maximum, if that is
	// less): under it the collector would run back to back for a heap of
	// a few MiB. A limit that leaves less is one the heap does not fit:
	// the bound goes down to this least, the most the collector can do,
	// and the decision says so.
	MinSoftMax = 16 << 20
	// RaiseStep is the least a bound is raised by: raising is never
	// urgent (a bound under its target only collects a little early), so
	// it waits until it is worth an attach. Lowering is never held back.
	RaiseStep = 16 << 20
)

// Input is what the decision reads, in bytes.
type Input struct {
	// Limit is the container's memory limit; 0 is none.
	Limit int64
	// HeapMax is the heap's maximum (-Xmx, MaxHeapSize).
	HeapMax int64
	// NonHeap is what the container holds outside the JVM's heap, as
	// measured (the agent's: the larger of its working set less the
	// committed heap, and the JVM's own non-heap counters).
	NonHeap int64
	// Current is the JVM's SoftMaxHeapSize now; 0 if not known.
	Current int64
}

// Decision is where the bound should be.
type Decision struct {
	// Target is the highest bound the limit allows: min(HeapMax, Limit -
	// NonHeap - Headroom), rounded down to Granule; 0 when it is under
	// MinSoftMax (the heap does not fit: the bound is then set to the
	// least, and the limit is the decision's to fix).
	Target int64
	// Set says the JVM's bound should be moved to SoftMax; when false it
	// stays at Current.
	Set     bool
	SoftMax int64
	// Reason says why, for the agent's log and report.
	Reason string
}

// Headroom is what is left free under limit beside the heap's bound and
// the non-heap.
func Headroom(limit int64) int64 {
	return max(MinHeadroom, int64(float64(limit)*HeadroomShare))
}

// LimitFor is the least limit under which Decide leaves the whole heap of
// heapMax beside nonHeap: Headroom's inverse, kept beside it so the two
// read one rule.
func LimitFor(heapMax, nonHeap int64) int64 {
	need := heapMax + max(nonHeap, 0)
	return max(need+MinHeadroom, int64(math.Ceil(float64(need)/(1-HeadroomShare))))
}

// Decide places the bound. It never sets one above HeapMax, nor one that,
// with the non-heap and the headroom, passes Limit.
func Decide(in Input) Decision {
	if in.HeapMax <= 0 {
		return Decision{Reason: "the heap's maximum is not known"}
	}
	target := in.HeapMax
	if in.Limit > 0 {
		target = min(target, in.Limit-max(in.NonHeap, 0)-Headroom(in.Limit))
	}
	target -= target % Granule
	if lowest := min(MinSoftMax, in.HeapMax); target < lowest {
		d := Decision{SoftMax: in.Current, Reason: fmt.Sprintf("the limit %s leaves the heap %s after %s of non-heap and %s of headroom: no soft bound fits",
			mib(in.Limit), mib(max(target, 0)), mib(in.NonHeap), mib(Headroom(in.Limit)))}
		if in.Current <= 0 || in.Current > lowest {
			d.Set, d.SoftMax = true, lowest
			d.Reason += fmt.Sprintf("; lowered to the least, %s", mib(lowest))
		}
		return d
	}
	d := Decision{Target: target}
	switch {
	case in.Current <= 0 || in.Current > target:
		d.Set, d.SoftMax = true, target
		if in.Current > 0 {
			d.Reason = fmt.Sprintf("lowered from %s: the limit %s holds %s of heap beside %s of non-heap and %s of headroom",
				mib(in.Current), mib(in.Limit), mib(target), mib(in.NonHeap), mib(Headroom(in.Limit)))
		} else {
			d.Reason = fmt.Sprintf("set: the limit %s holds %s of heap", mib(in.Limit), mib(target))
		}
	case target-in.Current >= RaiseStep || target == in.HeapMax && in.Current < target:
		d.Set, d.SoftMax = true, target
		d.Reason = fmt.Sprintf("raised from %s: the limit %s holds %s of heap", mib(in.Current), mib(in.Limit), mib(target))
	default:
		d.SoftMax = in.Current
		d.Reason = "within a step of its target"
	}
	return d
}

func mib(b int64) string { return fmt.Sprintf("%dMi", b>>20) }

package jvm

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// ReachOf is the memory limit under which a JVM may be OOM-killed once its
// heap fills, where it can be known without the limit the JVM started
// under: the reach measured by the node agent (MeasuredReach), or the
// larger spec estimate where the spec's -Xmx says more than was measured
// (a container running more than one JVM, the agent reading the smaller);
// else jvm.Reach of the spec's -Xmx. heapMax is the maximum the reach is
// of, and how says where both come from, for a message. ok is false for a
// heap the spec sizes from the limit at start, or whose options come from
// an object the spec does not hold, unmeasured.
func ReachOf(h Heap, m *Measured) (reach resource.Quantity, heapMax int64, how string, ok bool) {
	switch {
	case m != nil:
		reach = MeasuredReach(*m)
		heapMax = m.HeapMax
		how = fmt.Sprintf("measured: a heap of %dMi at most, %dMi outside it", m.HeapMax>>20, m.NonHeap>>20)
		if h.Max != nil {
			if spec := Reach(*h.Max); spec.Cmp(reach) > 0 {
				reach, heapMax, how = spec, h.Max.Value(), h.Option+" in the spec, more than measured"
			}
		}
		return reach, heapMax, how, true
	case h.Unknown != "" || h.Max == nil:
		return resource.Quantity{}, 0, "", false
	}
	return Reach(*h.Max), h.Max.Value(), fmt.Sprintf("%s, a quarter more and %s outside the heap", h.Option, NonHeap.String()), true
}

// DefaultRAMPercentage is the share of its memory limit a JVM sizes its
// heap's maximum at when no option says otherwise.
const DefaultRAMPercentage = 25.0

// Percentage is the share of its limit at start (in percent) that h's JVM
// sizes its heap at, false where an option fixes the heap instead or the
// spec does not hold the options.
func Percentage(h Heap) (float64, bool) {
	if !h.JVM || h.Max != nil || h.Unknown != "" {
		return 0, false
	}
	if h.Option == "" {
		return DefaultRAMPercentage, true
	}
	p, err := strconv.ParseFloat(strings.TrimPrefix(h.Option, "-XX:MaxRAMPercentage="), 64)
	if err != nil || p <= 0 || p > 100 {
		return 0, false
	}
	return p, true
}

// The thresholds of Fit.
const (
	// WastedAtLeast and WastedShare: a limit is wasted on a heap when it
	// is above the heap's reach by at least WastedAtLeast and by at least
	// WastedShare of itself. 256Mi is the recommender's least memory
	// margin (recommend.DefaultConfig's MemoryMinMargin): a limit tailor
	// sizes above a full heap carries that much by design, and turning it
	// into heap at every restart would grow the heap by it each time. A
	// quarter of the limit is the reach's own allowance (a quarter of the
	// heap) and more: under it, what a restart gains is within what the
	// estimate may be wrong by, and not worth a JVM's restart and warm-up.
	WastedAtLeast = 256 << 20
	WastedShare   = 0.25
	// GrowAtLeast: a heap at its maximum is advised to grow only by at
	// least this share of it. A smaller step is within the JVM's own
	// rounding of the heap (to a G1 region, up to 32Mi) and its
	// collector's ergonomics, and not worth a restart.
	GrowAtLeast = 0.10
)

// FitReason says what a JVM's heap makes of its memory limit.
type FitReason string

const (
	// FitWasted: the limit is well above the heap's reach and the heap
	// does not press against it: the heap can never use the difference.
	// A lower limit gives it back; a larger heap would use it.
	FitWasted FitReason = "LimitAboveHeapReach"
	// FitHeapFull: the container holds at least its heap's maximum and
	// the recommendation asks for a limit above the heap's reach: memory
	// a raise gives the container cannot hold more heap, which only a
	// restart with a larger heap option gives.
	FitHeapFull FitReason = "HeapAtItsMaximum"
)

// FitInput is what Fit judges one container's JVM from.
type FitInput struct {
	Heap Heap
	// Measured is what the node agent read of the running JVM; nil when
	// it did not.
	Measured *Measured
	// Limit is the memory limit the container runs under, or will once
	// the change tailor decided is applied; zero when it has none (a heap
	// without a limit is sized from the node, and nothing is judged).
	Limit resource.Quantity
	// StartLimit is the limit the JVM started under, which a heap sized
	// by MaxRAMPercentage is a share of; zero when unknown (the pod was
	// resized since): such a heap is then judged only when measured.
	StartLimit resource.Quantity
	// WorkingSet is the container's memory in use (its peak, for a
	// history); nil when unknown.
	WorkingSet *resource.Quantity
	// Needed is the memory limit the recommendation asks for; zero when
	// there is none.
	Needed resource.Quantity
	// Lowers: tailor lowers this limit in place towards Needed
	// (RequestsAndLimits, in a mode that resizes), stopping at the heap's
	// reach where it knows it without the limit at start (ReachOf, as
	// keepHeapReach does). The limit judged is then the one it is heading
	// for, the larger of Needed and the reach, so that a lowering still
	// waiting out its stabilization is not advised against.
	Lowers bool
}

// Fit is what a JVM's heap makes of its memory limit, and the heap option
// that would use the limit; Reason "" when there is nothing to say.
type Fit struct {
	Reason FitReason
	// HeapMax is the heap's maximum now and Reach what the container may
	// need once it fills (ReachOf, or jvm.Reach of the limit's share).
	HeapMax, Reach resource.Quantity
	// Limit is the limit the suggested heap is sized for: the one the
	// container has, or the recommendation's where the heap is full and
	// it asks for more.
	Limit resource.Quantity
	// Option is the heap's option now ("" for the JVM's default
	// MaxRAMPercentage), Suggested the one a restart should carry,
	// SuggestedHeap the heap's maximum under it at Limit: its reach is
	// never above Limit.
	Option, Suggested string
	SuggestedHeap     resource.Quantity
	// Message says it for people: what is wasted or short, and what would
	// use it.
	Message string
}

// JudgeFit says whether memory above a JVM's heap's reach is wasted, or a
// full heap cannot use what a raise gives, and which heap option a restart
// should carry for the heap to use the limit. It is pure: the caller says
// which limit the container has and what the recommendation asks.
//
// A full heap (the working set at or above its maximum, and a
// recommendation above its reach) is advised a heap for the larger of the
// limit and the recommendation, when that grows it by GrowAtLeast; any
// other heap, one for the limit, when the limit is above the reach by
// WastedAtLeast and WastedShare of itself. The suggestion keeps the
// option's kind: a share stays a share (MaxRAMPercentage, applied to the
// limit the restarted JVM starts under), a size stays a size (-Xmx,
// -XX:MaxHeapSize); a heap known only by measurement is given -Xmx.
func JudgeFit(in FitInput) Fit {
	h, m := in.Heap, in.Measured
	if in.Limit.Sign() <= 0 || (!h.JVM && m == nil) {
		return Fit{}
	}
	reach, heapMax, how, ok := ReachOf(h, m)
	limit := in.Limit.Value()
	if ok && in.Lowers && in.Needed.Sign() > 0 {
		limit = min(limit, max(in.Needed.Value(), reach.Value()))
	}
	pct, sized := Percentage(h)
	if !ok && sized && in.StartLimit.Sign() > 0 {
		heapMax = int64(float64(in.StartLimit.Value()) * pct / 100)
		reach = Reach(*resource.NewQuantity(heapMax, resource.BinarySI))
		how = fmt.Sprintf("%s of the %s limit it started under, a quarter more and %s outside the heap", percentText(h, pct), in.StartLimit.String(), NonHeap.String())
		ok = true
	}
	if !ok || heapMax <= 0 {
		return Fit{}
	}
	out := Fit{HeapMax: *resource.NewQuantity(heapMax, resource.BinarySI), Reach: reach, Option: h.Option}
	full := in.WorkingSet != nil && in.WorkingSet.Value() >= heapMax && in.Needed.Cmp(reach) > 0
	target := limit
	if full {
		target = max(limit, in.Needed.Value())
	}
	heap := largestHeap(target, m)
	switch {
	case full && float64(heap) >= float64(heapMax)*(1+GrowAtLeast):
		out.Reason = FitHeapFull
	case !full && limit-reach.Value() >= max(WastedAtLeast, int64(float64(limit)*WastedShare)) && heap > heapMax:
		out.Reason = FitWasted
	default:
		return Fit{}
	}
	out.Limit = *resource.NewQuantity(target, resource.BinarySI)
	out.Suggested, heap = suggest(h, target, heap)
	if out.Suggested == "" {
		return Fit{}
	}
	out.SuggestedHeap = *resource.NewQuantity(heap, resource.BinarySI)
	switch out.Reason {
	case FitHeapFull:
		// The working set is left out: it moves every sync, and status,
		// which carries this, is written only when it changes.
		out.Message = fmt.Sprintf("the JVM holds its whole heap (%s at most) and the recommendation asks for a %s memory limit, above the heap's reach %s (%s): a raise gives the heap nothing; a restart with %s would use a %s limit",
			size(heapMax), size(in.Needed.Value()), size(reach.Value()), how, out.Suggested, size(target))
	default:
		heading := ""
		if limit < in.Limit.Value() {
			heading = fmt.Sprintf(" (tailor is lowering it from %s)", size(in.Limit.Value()))
		}
		out.Message = fmt.Sprintf("memory limit %s%s is %s above the JVM's heap's reach %s (%s): the heap can never use it; a restart with %s would, or a limit of %s gives it back",
			size(limit), heading, size(limit-reach.Value()), size(reach.Value()), how, out.Suggested, size(reach.Value()+1<<20-1))
	}
	return out
}

// suggest is the option that gives h's JVM at most a heap of heap bytes
// under limit, and the heap it gives: a share of the limit where the spec
// sizes the heap so, else a size in whole MiB of the option's own kind.
func suggest(h Heap, limit, heap int64) (string, int64) {
	if _, sized := Percentage(h); sized {
		// The JVM takes its share of the limit rounded down; a whole
		// percent rounded down keeps the heap under heap.
		pct := heap * 100 / limit
		if pct < 1 {
			return "", 0
		}
		return "-XX:MaxRAMPercentage=" + strconv.FormatInt(pct, 10), limit * pct / 100
	}
	heap = heap >> 20 << 20
	if heap <= 0 {
		return "", 0
	}
	if strings.HasPrefix(h.Option, "-XX:MaxHeapSize=") {
		return fmt.Sprintf("-XX:MaxHeapSize=%dm", heap>>20), heap
	}
	return fmt.Sprintf("-Xmx%dm", heap>>20), heap
}

// largestHeap is the largest heap, in whole MiB, whose reach is at most
// limit: by the spec's estimate (Reach), which holds once the option is in
// the spec, and by the non-heap measured where there is one
// (MeasuredReach), the larger of the two holding as keepHeapReach holds
// it. 0 when no heap fits.
func largestHeap(limit int64, m *Measured) int64 {
	fits := func(mi int64) bool {
		heap := mi << 20
		r := Reach(*resource.NewQuantity(heap, resource.BinarySI))
		if r.Value() > limit {
			return false
		}
		if m != nil {
			mr := MeasuredReach(Measured{HeapMax: heap, NonHeap: m.NonHeap})
			return mr.Value() <= limit
		}
		return true
	}
	lo, hi := int64(0), limit>>20
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo << 20
}

// percentText is "MaxRAMPercentage 25%" for the share h's heap is sized at.
func percentText(h Heap, pct float64) string {
	s := "MaxRAMPercentage " + strconv.FormatFloat(pct, 'f', -1, 64) + "%"
	if h.Option == "" {
		s = "the default " + s
	}
	return s
}

// size writes bytes as whole GiB where they are, else as MiB rounded
// down.
func size(b int64) string {
	if b >= 1<<30 && b%(1<<30) == 0 {
		return strconv.FormatInt(b>>30, 10) + "Gi"
	}
	return strconv.FormatInt(b>>20, 10) + "Mi"
}

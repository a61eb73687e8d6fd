package nsrules

import (
	"fmt"
	"math"
	"math/big"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Bound is one end of a container's range and the LimitRange that sets it.
type Bound struct {
	Quantity resource.Quantity
	// LimitRange is the name of the LimitRange that sets the bound.
	LimitRange string
}

// Bounds is the range a container's request and limit of one resource must
// stay in: both at least Min and at most Max, and the limit at most
// MaxLimitRequestRatio times the request. Each is the tightest over the
// namespace's Container-type LimitRange items; nil where none sets it.
type Bounds struct {
	Resource             corev1.ResourceName
	Min, Max             *Bound
	MaxLimitRequestRatio *Bound
}

// ContainerBounds is the range the namespace's LimitRanges give a container's
// res (cpu or memory).
func (r Rules) ContainerBounds(res corev1.ResourceName) Bounds {
	b := Bounds{Resource: res}
	for _, lr := range sortedLimitRanges(r.LimitRanges) {
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			if q, ok := item.Min[res]; ok && (b.Min == nil || q.Cmp(b.Min.Quantity) > 0) {
				b.Min = &Bound{Quantity: q.DeepCopy(), LimitRange: lr.Name}
			}
			if q, ok := item.Max[res]; ok && (b.Max == nil || q.Cmp(b.Max.Quantity) < 0) {
				b.Max = &Bound{Quantity: q.DeepCopy(), LimitRange: lr.Name}
			}
			if q, ok := item.MaxLimitRequestRatio[res]; ok && (b.MaxLimitRequestRatio == nil || q.Cmp(b.MaxLimitRequestRatio.Quantity) < 0) {
				b.MaxLimitRequestRatio = &Bound{Quantity: q.DeepCopy(), LimitRange: lr.Name}
			}
		}
	}
	return b
}

// Clamp brings a container's proposed request and limit (nil: none) into b:
// min <= request <= limit <= max and limit <= ratio * request. It returns the
// values and, when it changed any, why ("capped by LimitRange team max cpu
// 4"), for a policy's status.
//
// The request is what the container needs, so where the ratio binds Clamp
// lowers the limit rather than raise the request. Where b asks for a limit
// (a max, or a ratio) and there is none, Clamp sets the largest one b allows:
// the nearest to no limit at all. A zero request under a ratio becomes the
// smallest that lets the limit be. Values are whole milli-cpu and whole bytes,
// rounded toward the range.
//
// When the LimitRanges contradict each other (a min above another's max) no
// value passes; Clamp then keeps within the max and says so.
func (b Bounds) Clamp(request resource.Quantity, limit *resource.Quantity) (resource.Quantity, *resource.Quantity, string) {
	var why []string
	u := unitOf(b.Resource)
	req := u.up(request)
	var lim *int64
	if limit != nil {
		l := u.down(*limit)
		lim = &l
	}
	var minV, maxV int64 = 0, math.MaxInt64
	if b.Min != nil {
		minV = u.up(b.Min.Quantity)
	}
	if b.Max != nil {
		maxV = u.down(b.Max.Quantity)
	}
	if minV > maxV {
		why = append(why, fmt.Sprintf("LimitRange %s min %s %s is above LimitRange %s max %s %s: no value is admitted",
			b.Min.LimitRange, b.Resource, b.Min.Quantity.String(), b.Max.LimitRange, b.Resource, b.Max.Quantity.String()))
		minV = maxV
	}
	if req < minV {
		req = minV
		why = append(why, fmt.Sprintf("raised by LimitRange %s min %s %s", b.Min.LimitRange, b.Resource, b.Min.Quantity.String()))
	}
	if req > maxV {
		req = maxV
		why = append(why, fmt.Sprintf("capped by LimitRange %s max %s %s", b.Max.LimitRange, b.Resource, b.Max.Quantity.String()))
	}
	if b.MaxLimitRequestRatio != nil && req == 0 {
		// A ratio needs a request above zero: the smallest unit there is.
		req = max(1, minV)
		why = append(why, fmt.Sprintf("raised above 0 for LimitRange %s maxLimitRequestRatio %s %s", b.MaxLimitRequestRatio.LimitRange, b.Resource, b.MaxLimitRequestRatio.Quantity.String()))
	}
	if lim == nil && (b.Max != nil || b.MaxLimitRequestRatio != nil) {
		l := maxV
		by := b.Max
		if b.MaxLimitRequestRatio != nil {
			if r := u.ratioLimit(req, b.MaxLimitRequestRatio.Quantity); r < l {
				l, by = r, b.MaxLimitRequestRatio
			}
		}
		lim = &l
		why = append(why, fmt.Sprintf("limit set by LimitRange %s, which requires one for %s", by.LimitRange, b.Resource))
	}
	if lim != nil {
		switch {
		case *lim > maxV:
			*lim = maxV
			why = append(why, fmt.Sprintf("limit capped by LimitRange %s max %s %s", b.Max.LimitRange, b.Resource, b.Max.Quantity.String()))
		case *lim < req:
			// The apiserver refuses a request above the limit; min <= req <= max,
			// so the limit may follow the request.
			*lim = req
			why = append(why, "limit raised to the request")
		}
		if b.MaxLimitRequestRatio != nil {
			if r := u.ratioLimit(req, b.MaxLimitRequestRatio.Quantity); *lim > r {
				*lim = max(r, req)
				why = append(why, fmt.Sprintf("limit capped by LimitRange %s maxLimitRequestRatio %s %s", b.MaxLimitRequestRatio.LimitRange, b.Resource, b.MaxLimitRequestRatio.Quantity.String()))
			}
		}
	}
	outReq := u.quantity(req, request)
	var outLim *resource.Quantity
	if lim != nil {
		l := u.quantity(*lim, orZero(limit))
		outLim = &l
	}
	if outReq.Cmp(request) == 0 && sameLimit(outLim, limit) {
		return request.DeepCopy(), copyOf(limit), ""
	}
	return outReq, outLim, strings.Join(why, "; ")
}

// unit is the whole step Clamp works in: milli-cpu for cpu, bytes otherwise.
type unit struct{ milli bool }

func unitOf(res corev1.ResourceName) unit { return unit{milli: res == corev1.ResourceCPU} }

func (u unit) up(q resource.Quantity) int64 {
	if u.milli {
		return q.MilliValue()
	}
	return q.Value()
}

// down rounds toward zero where up rounds away: a max of 1.5 bytes allows 1.
func (u unit) down(q resource.Quantity) int64 {
	v := u.up(q)
	var back resource.Quantity
	if u.milli {
		back = *resource.NewMilliQuantity(v, q.Format)
	} else {
		back = *resource.NewQuantity(v, q.Format)
	}
	if back.Cmp(q) > 0 {
		v--
	}
	return v
}

func (u unit) quantity(v int64, like resource.Quantity) resource.Quantity {
	format := like.Format
	if format == "" {
		format = resource.DecimalSI
		if !u.milli {
			format = resource.BinarySI
		}
	}
	if u.milli {
		return *resource.NewMilliQuantity(v, format)
	}
	return *resource.NewQuantity(v, format)
}

// ratioLimit is the largest limit, in u, that request (in u) and ratio let
// through the LimitRanger's float comparison.
func (u unit) ratioLimit(request int64, ratio resource.Quantity) int64 {
	// Exact first: floor(request * ratio), in u.
	r := new(big.Int).Mul(big.NewInt(request), big.NewInt(ratio.MilliValue()))
	r.Quo(r, big.NewInt(1000))
	if !r.IsInt64() {
		return math.MaxInt64
	}
	l := r.Int64()
	reqQ, ratioQ := u.quantity(request, resource.Quantity{}), ratio
	// Then step down while the apiserver's float arithmetic says otherwise.
	for l > request && ratioViolation("", "", ratioQ, reqQ, true, u.quantity(l, resource.Quantity{}), true) != "" {
		l--
	}
	return l
}

func orZero(q *resource.Quantity) resource.Quantity {
	if q == nil {
		return resource.Quantity{}
	}
	return *q
}

func copyOf(q *resource.Quantity) *resource.Quantity {
	if q == nil {
		return nil
	}
	c := q.DeepCopy()
	return &c
}

func sameLimit(a, b *resource.Quantity) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Cmp(*b) == 0
}

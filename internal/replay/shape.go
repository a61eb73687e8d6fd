package replay

import (
	"fmt"
	"math"
)

// Shape is how a policy's memory advice becomes a container's request and
// limit: the controlledValues of the policy and the limit the workload was
// deployed with. Kubernetes charges a container its request (the scheduler
// reserves it) and kills it at its limit, so the replay scores both.
type Shape struct {
	// Name labels the shape in tables and JSON.
	Name string
	// LimitRatio > 0 is RequestsAndLimits on a workload whose memory limit
	// is LimitRatio times its request: the request is the advice, the
	// limit keeps the ratio (as tailor and VerticalPodAutoscaler do), or is
	// the policy's own limit advice where that is higher. 0 is RequestsOnly:
	// the workload's own limit (Series.MemoryLimit; none when unknown) is
	// kept and the request is the advice capped at it.
	LimitRatio float64
}

// The shapes the benchmark scores.
var (
	// LimitEqualsRequest is RequestsAndLimits on a container whose memory
	// limit equals its request, the usual advice for memory: for a policy
	// with one value every sample over the request is an OOM kill, which
	// is the single value scored before requests and limits were told
	// apart; a policy that advises a limit of its own sets it.
	LimitEqualsRequest = Shape{Name: "RequestsAndLimits 1x", LimitRatio: 1}
	// RequestsOnly keeps the workload's own limit.
	RequestsOnly = Shape{Name: "RequestsOnly"}
)

// LimitRatioShape is RequestsAndLimits at another limit-to-request ratio.
func LimitRatioShape(ratio float64) Shape {
	return Shape{Name: fmt.Sprintf("RequestsAndLimits %gx", ratio), LimitRatio: ratio}
}

// Validate reports a shape that cannot be applied.
func (sh Shape) Validate() error {
	if sh.Name == "" {
		return fmt.Errorf("a shape needs a name")
	}
	if math.IsNaN(sh.LimitRatio) || (sh.LimitRatio != 0 && sh.LimitRatio < 1) || math.IsInf(sh.LimitRatio, 0) {
		return fmt.Errorf("shape %s: limit ratio %g must be 0 (RequestsOnly) or at least 1", sh.Name, sh.LimitRatio)
	}
	return nil
}

// InForce is the memory request and limit in force when a policy advises
// want under this shape, for a workload whose own limit is own bytes (0:
// none). A limit of +Inf is no limit.
func (sh Shape) InForce(want Resources, own float64) (request, limit float64) {
	if sh.LimitRatio == 0 {
		if own <= 0 {
			return want.Memory, math.Inf(1)
		}
		return min(want.Memory, own), own
	}
	return want.Memory, max(want.Memory*sh.LimitRatio, want.MemoryLimit)
}

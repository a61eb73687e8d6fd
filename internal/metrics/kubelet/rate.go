package kubelet

import (
	"fmt"
	"time"

	"github.com/tailorhq/tailor/internal/metrics"
)

// counter turns successive samples of a cumulative counter into a rate. It
// is the adapter's memory between syncs; the judging stays in metrics.
type counter struct {
	prev point
	// last is the rate computed from the two newest distinct samples, reused
	// while the kubelet keeps serving the same sample (it refreshes container
	// stats every 10-15s, more slowly than a controller may ask) and for
	// every other policy reading the same shared page.
	last   metrics.Figure
	window time.Duration
}

// observe records a new sample and returns the rate it allows.
func (c *counter) observe(p point, what string) (metrics.Figure, time.Duration) {
	switch {
	case c.prev.t.IsZero():
		c.prev = p
		return metrics.Unusable(metrics.ReasonWarmingUp, "first sample of the "+what+" counter; a rate needs two"), 0
	case !p.t.After(c.prev.t):
		if c.last.Set {
			return c.last, c.window
		}
		return metrics.Unusable(metrics.ReasonWarmingUp, "the kubelet has not refreshed the "+what+" counter since the first sample"), 0
	case p.v < c.prev.v:
		// A counter only goes back when the container restarted.
		was := c.prev.v
		*c = counter{prev: p}
		return metrics.Unusable(metrics.ReasonWarmingUp, fmt.Sprintf("the %s counter went back from %v to %v (container restarted); a rate needs two samples", what, was, p.v)), 0
	}
	dt := p.t.Sub(c.prev.t)
	c.last = metrics.Value((p.v-c.prev.v)/dt.Seconds(), p.t)
	c.window = dt
	c.prev = p
	return c.last, c.window
}

// throttling turns two counters (throttled periods, all periods) into the
// fraction of periods throttled between successive samples.
// Its window is its own: the counters come from /metrics/cadvisor, read
// apart from the CPU counter's /metrics/resource, so the two pages may
// hold samples from either side of a cAdvisor refresh.
type throttling struct {
	throttled, periods point
	last               metrics.Figure
	window             time.Duration
}

func (c *throttling) observe(throttled, periods point) (metrics.Figure, time.Duration) {
	switch {
	case c.periods.t.IsZero():
		c.throttled, c.periods = throttled, periods
		return metrics.Unusable(metrics.ReasonWarmingUp, "first sample of the CFS period counters; a fraction needs two"), 0
	case !periods.t.After(c.periods.t):
		if c.last.Set {
			return c.last, c.window
		}
		return metrics.Unusable(metrics.ReasonWarmingUp, "cAdvisor has not refreshed the CFS period counters since the first sample"), 0
	case periods.v < c.periods.v || throttled.v < c.throttled.v:
		*c = throttling{throttled: throttled, periods: periods}
		return metrics.Unusable(metrics.ReasonWarmingUp, "the CFS period counters went back (container restarted)"), 0
	}
	dp := periods.v - c.periods.v
	f := 0.0 // no period ran, so none was throttled
	if dp > 0 {
		f = (throttled.v - c.throttled.v) / dp
	}
	c.last, c.window = metrics.Value(f, periods.t), periods.t.Sub(c.periods.t)
	c.throttled, c.periods = throttled, periods
	return c.last, c.window
}

package canary

import (
	"fmt"
	"math"
)

// queryVerdict is what a query guardrail makes of this sync's answers.
type queryVerdict int

const (
	queryHolds queryVerdict = iota
	queryTrips
	// queryUnanswered: no value to judge, which neither trips nor passes.
	queryUnanswered
)

// judge says whether q trips on a, with what it saw ("canary 0.31 vs
// siblings 0.12 (+158%, max +20%)"), or why it cannot tell. The canary's
// +Inf or -Inf is a value (a quantile above the highest bucket); the
// siblings' is no bound to compare with. Siblings at 0 leave no room: any
// canary value past 0, the way the guardrail trips, trips it.
func (q QueryGuardrail) judge(a GuardrailAnswer) (queryVerdict, string) {
	c := a.Canary
	if c.Missing != "" {
		return queryUnanswered, "canary pods: " + c.Missing
	}
	if math.IsNaN(c.Value) {
		return queryUnanswered, "canary pods: NaN"
	}
	if !q.Relative {
		if q.past(c.Value, q.Threshold) {
			return queryTrips, fmt.Sprintf("canary %s, %s the threshold %s", num(c.Value), q.direction(), num(q.Threshold))
		}
		return queryHolds, ""
	}
	s := a.Siblings
	switch {
	case s.Missing != "":
		return queryUnanswered, "other pods: " + s.Missing
	case math.IsNaN(s.Value) || math.IsInf(s.Value, 0):
		return queryUnanswered, fmt.Sprintf("other pods: %s, nothing to compare with", num(s.Value))
	}
	// Percent of the siblings' magnitude, so that a negative value is
	// moved the same way as a positive one.
	room := math.Abs(s.Value) * q.Percent / 100
	bound := s.Value + room
	if q.Below {
		bound = s.Value - room
	}
	if !q.past(c.Value, bound) {
		return queryHolds, ""
	}
	sign := "+"
	if q.Below {
		sign = "-"
	}
	if s.Value == 0 {
		return queryTrips, fmt.Sprintf("canary %s vs siblings 0 (max %s%.0f%% of 0)", num(c.Value), sign, q.Percent)
	}
	change := (c.Value - s.Value) / math.Abs(s.Value) * 100
	return queryTrips, fmt.Sprintf("canary %s vs siblings %s (%+.0f%%, max %s%.0f%%)", num(c.Value), num(s.Value), change, sign, q.Percent)
}

// past reports whether v is past bound the way q trips.
func (q QueryGuardrail) past(v, bound float64) bool {
	if q.Below {
		return v < bound
	}
	return v > bound
}

func (q QueryGuardrail) direction() string {
	if q.Below {
		return "below"
	}
	return "above"
}

// bound says when q trips, for the Canary condition: "above 0.5", "more
// than 20% above the other pods'".
func (q QueryGuardrail) bound() string {
	if q.Relative {
		return fmt.Sprintf("more than %.0f%% %s the other pods'", q.Percent, q.direction())
	}
	return q.direction() + " " + num(q.Threshold)
}

// num is a query's value for people: four significant digits.
func num(v float64) string { return fmt.Sprintf("%.4g", v) }

package canary_test

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/canary"
)

// value and missing are a query's answers.
func value(v float64) canary.QueryAnswer    { return canary.QueryAnswer{Value: v} }
func missing(why string) canary.QueryAnswer { return canary.QueryAnswer{Missing: why} }
func absolute(trips v1alpha1.CanaryQueryTrips, threshold string) v1alpha1.CanaryQuery {
	return v1alpha1.CanaryQuery{Name: "latency", Query: "q", TripsWhen: trips, Threshold: &threshold}
}
func relative(trips v1alpha1.CanaryQueryTrips, percent int32) v1alpha1.CanaryQuery {
	return v1alpha1.CanaryQuery{Name: "latency", Query: "q", TripsWhen: trips, SiblingsPercent: &percent}
}

// TestCanaryQueryGuardrails: half way through the canary's window, a query
// guardrail whose value is past its bound (a threshold, or the siblings'
// value moved by a percent) rolls the canary back in place and says by how
// much; one within it, or at it, holds; one without an answer neither
// trips nor passes, and the condition says why.
func TestCanaryQueryGuardrails(t *testing.T) {
	const (
		trips      = "trips"
		holdsQuiet = "holds"
		unanswered = "unanswered"
	)
	cases := map[string]struct {
		query          v1alpha1.CanaryQuery
		canary, others canary.QueryAnswer
		notAsked       bool
		want           string
		wantSaid       string
	}{
		"above a threshold": {query: absolute(v1alpha1.CanaryQueryAbove, "0.25"), canary: value(0.31), want: trips,
			wantSaid: "guardrail latency: canary 0.31, above the threshold 0.25"},
		"under a threshold":                {query: absolute(v1alpha1.CanaryQueryAbove, "0.25"), canary: value(0.2), want: holdsQuiet},
		"at a threshold":                   {query: absolute(v1alpha1.CanaryQueryAbove, "0.25"), canary: value(0.25), want: holdsQuiet},
		"below a floor":                    {query: absolute(v1alpha1.CanaryQueryBelow, "0.99"), canary: value(0.95), want: trips, wantSaid: "canary 0.95, below the threshold 0.99"},
		"above a floor":                    {query: absolute(v1alpha1.CanaryQueryBelow, "0.99"), canary: value(0.999), want: holdsQuiet},
		"+Inf above":                       {query: absolute(v1alpha1.CanaryQueryAbove, "1e3"), canary: value(math.Inf(1)), want: trips, wantSaid: "canary +Inf, above the threshold 1000"},
		"an absolute ignores the siblings": {query: absolute(v1alpha1.CanaryQueryAbove, "1"), canary: value(0.5), others: missing("down"), want: holdsQuiet},
		"far above the siblings": {query: relative(v1alpha1.CanaryQueryAbove, 20), canary: value(0.31), others: value(0.12), want: trips,
			wantSaid: "guardrail latency: canary 0.31 vs siblings 0.12 (+158%, max +20%)"},
		"a little above the siblings":        {query: relative(v1alpha1.CanaryQueryAbove, 20), canary: value(0.14), others: value(0.12), want: holdsQuiet},
		"at the bound":                       {query: relative(v1alpha1.CanaryQueryAbove, 20), canary: value(1.2), others: value(1), want: holdsQuiet},
		"below the siblings, tripping above": {query: relative(v1alpha1.CanaryQueryAbove, 0), canary: value(0.01), others: value(0.12), want: holdsQuiet},
		"far below the siblings": {query: relative(v1alpha1.CanaryQueryBelow, 10), canary: value(80), others: value(100), want: trips,
			wantSaid: "canary 80 vs siblings 100 (-20%, max -10%)"},
		"siblings at 0, canary above": {query: relative(v1alpha1.CanaryQueryAbove, 20), canary: value(0.01), others: value(0), want: trips,
			wantSaid: "canary 0.01 vs siblings 0 (max +20% of 0)"},
		"siblings and canary at 0": {query: relative(v1alpha1.CanaryQueryAbove, 20), canary: value(0), others: value(0), want: holdsQuiet},
		// -0.5 is 50% of |-1| above -1.
		"negative siblings": {query: relative(v1alpha1.CanaryQueryAbove, 20), canary: value(-0.5), others: value(-1), want: trips,
			wantSaid: "canary -0.5 vs siblings -1 (+50%, max +20%)"},
		// -0.9 is within 20% of |-1| above -1: the bound is -0.8, not
		// -1.2.
		"negative siblings, within": {query: relative(v1alpha1.CanaryQueryAbove, 20), canary: value(-0.9), others: value(-1), want: holdsQuiet},
		"canary NaN":                {query: absolute(v1alpha1.CanaryQueryAbove, "1"), canary: value(math.NaN()), want: unanswered, wantSaid: "latency (canary pods: NaN)"},
		"prometheus down": {query: relative(v1alpha1.CanaryQueryAbove, 20), canary: missing("prometheus: connection refused"), others: value(1), want: unanswered,
			wantSaid: "latency (canary pods: prometheus: connection refused)"},
		"siblings missing": {query: relative(v1alpha1.CanaryQueryAbove, 20), canary: value(5), others: missing("no other pod to compare with"), want: unanswered,
			wantSaid: "latency (other pods: no other pod to compare with)"},
		"siblings +Inf": {query: relative(v1alpha1.CanaryQueryAbove, 20), canary: value(5), others: value(math.Inf(1)), want: unanswered,
			wantSaid: "other pods: +Inf, nothing to compare with"},
		"not asked": {query: absolute(v1alpha1.CanaryQueryAbove, "1"), notAsked: true, want: unanswered, wantSaid: "latency (canary pods: not asked)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newCanaryWorld()
			w.spec.Behavior.ScaleDown.Canary.Guardrails = &v1alpha1.CanaryGuardrails{Queries: []v1alpha1.CanaryQuery{tc.query}}
			w.lowered(0, w.now.Add(-canaryWindow/2))
			if !tc.notAsked {
				w.answers = map[string]canary.GuardrailAnswer{"latency": {Canary: tc.canary, Siblings: tc.others}}
			}
			d := w.decide(t)
			got := holdsQuiet
			switch {
			case d.Canary.Reason == v1alpha1.CanaryReasonRolledBack:
				got = trips
			case strings.Contains(d.Canary.Message, "without an answer"):
				got = unanswered
			}
			if got != tc.want {
				t.Fatalf("the guardrail %s, want it %s; condition %s: %s", got, tc.want, d.Canary.Reason, d.Canary.Message)
			}
			if !strings.Contains(d.Canary.Message, tc.wantSaid) {
				t.Errorf("condition %s: %q, want it saying %q", d.Canary.Reason, d.Canary.Message, tc.wantSaid)
			}
			wantSends := []string(nil)
			wantEvents := []string(nil)
			if tc.want == trips {
				wantSends = []string{"web-0 app cpu 200m -> 500m"}
				wantEvents = []string{"web-0 CanaryRolledBack Query"}
				if e := d.Canary.Events; len(e) != 1 || !strings.Contains(e[0].Message, tc.wantSaid) {
					t.Errorf("events %+v, want one saying %q", e, tc.wantSaid)
				}
			}
			if diff := cmp.Diff(wantSends, sends(d)); diff != "" {
				t.Errorf("sends (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(wantEvents, events(d)); diff != "" {
				t.Errorf("events (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestCanaryQueryUnansweredHolds: past the window, a canary whose query
// guardrail has no answer is neither promoted nor rolled back: the others
// keep waiting and the condition says which query and why; once it answers
// within its bound, the canary is promoted.
func TestCanaryQueryUnansweredHolds(t *testing.T) {
	w := newCanaryWorld()
	w.spec.Behavior.ScaleDown.Canary.Guardrails = &v1alpha1.CanaryGuardrails{Queries: []v1alpha1.CanaryQuery{relative(v1alpha1.CanaryQueryAbove, 20)}}
	w.lowered(0, w.now.Add(-2*canaryWindow))
	w.answers = map[string]canary.GuardrailAnswer{"latency": {Canary: missing("Prometheus failed to answer (HTTP 503)"), Siblings: value(0.1)}}
	d := w.decide(t)
	if diff := cmp.Diff([]string{"web-1 Canary", "web-2 Canary"}, holds(d)); diff != "" {
		t.Errorf("held without an answer (-want,+got):\n%s", diff)
	}
	if len(d.Resizes) != 0 || len(d.Canary.Events) != 0 {
		t.Errorf("sends %v, events %v without an answer; want none", sends(d), events(d))
	}
	if c := d.Canary; c.Reason != v1alpha1.CanaryReasonWatching || !strings.Contains(c.Message, "held past their window") ||
		!strings.Contains(c.Message, "latency (canary pods: Prometheus failed to answer (HTTP 503))") {
		t.Errorf("condition %s: %q, want Watching, held past the window for latency's 503", c.Reason, c.Message)
	}
	if diff := cmp.Diff([]string{"web-0"}, canaryNames(d.Canary.State.Pods)); diff != "" {
		t.Errorf("canary pods (-want,+got):\n%s", diff)
	}
	w.state = d.Canary.State
	w.answers["latency"] = canary.GuardrailAnswer{Canary: value(0.11), Siblings: value(0.1)}
	d = w.decide(t)
	if d.Canary.Reason != v1alpha1.CanaryReasonPromoted {
		t.Errorf("condition %s: %q once the query answers within its bound, want Promoted", d.Canary.Reason, d.Canary.Message)
	}
	if diff := cmp.Diff([]string{"web-1 app cpu 500m -> 200m", "web-2 app cpu 500m -> 200m"}, sends(d)); diff != "" {
		t.Errorf("sends after the promotion (-want,+got):\n%s", diff)
	}
}

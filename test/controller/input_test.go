//go:build controller

package controller

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/controller/policy/act"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/test/builder"
)

// What a broken metrics source says must never resize a pod, and must show
// in the policy's status.
func TestBadMetricsHoldAndShowInStatus(t *testing.T) {
	key := func(e *env) metrics.Key { return metrics.Key{Namespace: e.ns, Pod: "web-0", Container: "app"} }
	cases := map[string]struct {
		feed func(e *env)
		// wantCondition and wantReason: the condition that must say so.
		wantCondition, wantReason string
		wantMessage               string
		// wantEvent is the event that must mark it, once in 120 syncs.
		wantEvent string
	}{
		"source unreachable": {
			feed:          func(e *env) { e.source.Fail(errors.New("connection refused")) },
			wantCondition: v1alpha1.ConditionReady, wantReason: "MetricsUnavailable", wantMessage: "connection refused",
			wantEvent: act.EventMetricsUnavailable,
		},
		"invalid values reported as a problem": {
			feed: func(e *env) {
				e.source.Forget(e.ns, "web-0", "app")
				e.source.Problems(metrics.Problem{Key: key(e), Metric: metrics.MetricCPU, Reason: metrics.ReasonInvalid, Detail: "NaN"})
			},
			wantCondition: v1alpha1.ConditionRecommendationProvided, wantReason: "NoUsageYet", wantMessage: "Invalid",
			wantEvent: act.EventMetricsIncomplete,
		},
		"stale samples reported as a problem": {
			feed: func(e *env) {
				e.source.Forget(e.ns, "web-0", "app")
				e.source.Problems(metrics.Problem{Key: key(e), Metric: metrics.MetricMemory, Reason: metrics.ReasonStale, Detail: "10m old"})
			},
			wantCondition: v1alpha1.ConditionRecommendationProvided, wantReason: "NoUsageYet", wantMessage: "Stale",
			wantEvent: act.EventMetricsIncomplete,
		},
		// A source that breaks its contract and passes garbage through as
		// usage: the controller must still not act on it.
		"NaN cpu and memory passed as usage": {
			feed:          func(e *env) { e.source.Set(e.ns, "web-0", "app", math.NaN(), math.NaN()) },
			wantCondition: v1alpha1.ConditionRecommendationProvided, wantReason: "NoUsageYet",
			wantEvent: act.EventMetricsIncomplete,
		},
		"negative cpu and memory passed as usage": {
			feed:          func(e *env) { e.source.Set(e.ns, "web-0", "app", -1, -1) },
			wantCondition: v1alpha1.ConditionRecommendationProvided, wantReason: "NoUsageYet",
			wantEvent: act.EventMetricsIncomplete,
		},
		"infinite cpu passed as usage": {
			feed:          func(e *env) { e.source.Set(e.ns, "web-0", "app", math.Inf(1), 200*mi) },
			wantCondition: v1alpha1.ConditionRecommendationProvided, wantReason: "NoUsageYet",
			wantEvent: act.EventMetricsIncomplete,
		},
		// More than the pod's node has (the harness's node: 8 cores,
		// 32Gi): a counter that wrapped, or a unit mistake.
		"cpu beyond the node passed as usage": {
			feed:          func(e *env) { e.source.Set(e.ns, "web-0", "app", 1e6, 200*mi) },
			wantCondition: v1alpha1.ConditionRecommendationProvided, wantReason: "NoUsageYet", wantMessage: "more than its node's capacity",
			wantEvent: act.EventMetricsIncomplete,
		},
		"memory beyond the node passed as usage": {
			feed:          func(e *env) { e.source.Set(e.ns, "web-0", "app", 0.2, 1<<50) },
			wantCondition: v1alpha1.ConditionRecommendationProvided, wantReason: "NoUsageYet", wantMessage: "more than its node's capacity",
			wantEvent: act.EventMetricsIncomplete,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, controllerOptions{})
			e.pod("web", webPod("web-0"))
			e.policy("web", nil)
			tc.feed(e)
			// Past a whole stabilization window: nothing may be lowered
			// or raised on this data.
			e.syncs("web", 120)
			if p := e.getPod("web-0"); p.Generation != 1 {
				t.Errorf("pod resized on bad metrics: generation %d, cpu %s/%s, memory %s/%s", p.Generation,
					requestOf(p, "app", "cpu"), limitOf(p, "app", "cpu"), requestOf(p, "app", "memory"), limitOf(p, "app", "memory"))
			}
			pol := e.getPolicy("web")
			c := condition(pol, tc.wantCondition)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.wantReason || !strings.Contains(c.Message, tc.wantMessage) {
				t.Errorf("%s condition = %+v, want False, reason %s, message naming %q", tc.wantCondition, c, tc.wantReason, tc.wantMessage)
			}
			if tc.wantEvent != "" {
				if n := e.events.count("web", tc.wantEvent); n != 1 {
					t.Errorf("%d %s event(s) in 120 syncs, want 1 (once per standing state); events:%s", n, tc.wantEvent, e.events)
				}
			}
		})
	}
}

// One broken sample among good ones must not change what the good ones
// call for: a container throttled after a +Inf reading is still raised.
func TestOneInfiniteSampleDoesNotBlockARaise(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.pod("web", webPod("web-0"))
	e.policy("web", nil)
	e.source.Set(e.ns, "web-0", "app", 0.5, 200*mi)
	e.syncs("web", 3)
	e.source.Set(e.ns, "web-0", "app", math.Inf(1), 200*mi)
	e.sync("web")
	e.source.SetThrottled(e.ns, "web-0", "app", 1.0, 200*mi, 0.5)
	e.syncs("web", 3)
	p := e.getPod("web-0")
	if got := limitOf(p, "app", "cpu"); got == "1" {
		t.Errorf("a throttled container at its 1-core limit was not raised in 3 syncs after one +Inf sample; status %+v; events:%s",
			e.getPolicy("web").Status.Conditions, e.events)
	}
}

// A steady state writes the policy's status once, not every sync.
func TestSteadyStateDoesNotRewriteStatus(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.pod("web", webPod("web-0"))
	e.policy("web", nil)
	e.source.Set(e.ns, "web-0", "app", 0.6, 300*mi)
	e.syncs("web", 3)
	rv := e.getPolicy("web").ResourceVersion
	e.syncs("web", 20)
	if got := e.getPolicy("web"); got.ResourceVersion != rv {
		t.Errorf("policy status rewritten during 20 syncs of a steady state (resourceVersion %s -> %s): %+v", rv, got.ResourceVersion, got.Status)
	}
}

// A metrics outage holds everything usage would decide, but not what pod
// status says: an OOM kill during the outage is still answered with more
// memory, and Ready says the source is down.
func TestOOMKillAnsweredDuringAMetricsOutage(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.pod("db", builder.Pod("db-0").Container(builder.Container("app").Requests("500m", "512Mi").Limits("1", "1Gi")))
	e.policy("db", nil)
	e.source.Set(e.ns, "db-0", "app", 0.3, 200*mi)
	e.syncs("db", 2)
	e.clock.Step(2 * time.Minute)
	e.source.Fail(errors.New("connection refused"))
	before := requestOf(e.getPod("db-0"), "app", corev1.ResourceMemory)
	e.oomKill("db-0")
	e.syncs("db", 2)
	if got := requestOf(e.getPod("db-0"), "app", corev1.ResourceMemory); got == before {
		t.Errorf("memory request still %s after an OOM kill during the outage", got)
	}
	c := condition(e.getPolicy("db"), v1alpha1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "MetricsUnavailable" || !strings.Contains(c.Message, "connection refused") {
		t.Errorf("Ready = %+v, want False MetricsUnavailable naming the error", c)
	}
	// What TailorMetricsUnavailable alerts on.
	up := func() float64 {
		return metricValue(t, "tailor_metrics_source_up", map[string]string{"namespace": e.ns, "policy": "db"})
	}
	if v := up(); v != 0 {
		t.Errorf("tailor_metrics_source_up = %v during the outage, want 0", v)
	}
	// Back: Ready again, and one event each marks when it went and came.
	e.source.Fail(nil)
	e.syncs("db", 2)
	if v := up(); v != 1 {
		t.Errorf("tailor_metrics_source_up = %v once the source answers, want 1", v)
	}
	if c := condition(e.getPolicy("db"), v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v after the source answered again, want True", c)
	}
	for _, reason := range []string{act.EventMetricsUnavailable, act.EventMetricsRestored} {
		if n := e.events.count("db", reason); n != 1 {
			t.Errorf("%d %s event(s), want 1; events:%s", n, reason, e.events)
		}
	}
}

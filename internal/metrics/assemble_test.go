package metrics_test

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/test/builder"
)

func ptr(v float64) *float64 { return &v }

func TestAssemble(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	fresh := now.Add(-5 * time.Second)
	old := now.Add(-10 * time.Minute)
	const maxAge = time.Minute
	running := builder.Pod("web").Namespace("ns").Container(builder.Container("app")).Running().Obj()
	app := metrics.Key{Namespace: "ns", Pod: "web", Container: "app"}
	db := metrics.Key{Namespace: "ns", Pod: "db", Container: "app"}
	good := metrics.Reading{CPU: metrics.Value(0.5, fresh), Memory: metrics.Value(100<<20, fresh), Window: 30 * time.Second}

	withSidecar := builder.Pod("web").Namespace("ns").Container(builder.Container("app")).
		Sidecar(builder.Container("proxy")).InitContainer(builder.Container("setup")).Running().
		ContainerStatus(corev1.ContainerStatus{Name: "proxy", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}).Obj()
	proxy := metrics.Key{Namespace: "ns", Pod: "web", Container: "proxy"}

	cases := map[string]struct {
		pods         []*corev1.Pod
		readings     map[metrics.Key]metrics.Reading
		wantUsage    map[metrics.Key]metrics.Usage
		wantProblems []metrics.Problem
	}{
		"good reading becomes usage": {
			pods:      []*corev1.Pod{running},
			readings:  map[metrics.Key]metrics.Reading{app: good},
			wantUsage: map[metrics.Key]metrics.Usage{app: {Key: app, Time: fresh, Window: 30 * time.Second, CPU: 0.5, Memory: 100 << 20}},
		},
		"usage is dated by the older figure, throttling kept": {
			pods: []*corev1.Pod{running},
			readings: map[metrics.Key]metrics.Reading{app: {
				CPU: metrics.Value(0.5, fresh), Memory: metrics.Value(1, fresh.Add(-time.Second)), Throttled: metrics.Value(0.75, fresh),
			}},
			wantUsage: map[metrics.Key]metrics.Usage{app: {Key: app, Time: fresh.Add(-time.Second), CPU: 0.5, Memory: 1, Throttled: ptr(0.75), ThrottledSince: fresh}},
		},
		"throttling spans the CPU's window unless it has its own": {
			pods: []*corev1.Pod{running, builder.Pod("db").Namespace("ns").Container(builder.Container("app")).Running().Obj()},
			readings: map[metrics.Key]metrics.Reading{
				app: {CPU: metrics.Value(0.5, fresh), Memory: metrics.Value(1, fresh), Throttled: metrics.Value(0.75, fresh), Window: 10 * time.Second},
				db: {CPU: metrics.Value(0.5, fresh), Memory: metrics.Value(1, fresh), Throttled: metrics.Value(0.75, fresh.Add(-5*time.Second)),
					Window: 10 * time.Second, ThrottledWindow: 20 * time.Second},
			},
			wantUsage: map[metrics.Key]metrics.Usage{
				app: {Key: app, Time: fresh, Window: 10 * time.Second, CPU: 0.5, Memory: 1, Throttled: ptr(0.75), ThrottledSince: fresh.Add(-10 * time.Second)},
				db:  {Key: db, Time: fresh, Window: 10 * time.Second, CPU: 0.5, Memory: 1, Throttled: ptr(0.75), ThrottledSince: fresh.Add(-25 * time.Second)},
			},
		},
		"zero usage is usage": {
			pods:      []*corev1.Pod{running},
			readings:  map[metrics.Key]metrics.Reading{app: {CPU: metrics.Value(0, fresh), Memory: metrics.Value(0, fresh)}},
			wantUsage: map[metrics.Key]metrics.Usage{app: {Key: app, Time: fresh}},
		},
		"no reading: missing": {
			pods:         []*corev1.Pod{running},
			readings:     map[metrics.Key]metrics.Reading{},
			wantUsage:    map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricAll, Reason: metrics.ReasonMissing, Detail: "the source has no sample for this container"}},
		},
		"NaN, Inf and negative are invalid": {
			pods: []*corev1.Pod{running},
			readings: map[metrics.Key]metrics.Reading{app: {
				CPU: metrics.Value(math.NaN(), fresh), Memory: metrics.Value(math.Inf(1), fresh), Throttled: metrics.Value(-0.1, fresh),
			}},
			wantUsage: map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{
				{Key: app, Metric: metrics.MetricCPU, Reason: metrics.ReasonInvalid, Detail: "value NaN"},
				{Key: app, Metric: metrics.MetricMemory, Reason: metrics.ReasonInvalid, Detail: "value +Inf"},
			},
		},
		"stale memory holds the container": {
			pods:      []*corev1.Pod{running},
			readings:  map[metrics.Key]metrics.Reading{app: {CPU: metrics.Value(0.5, fresh), Memory: metrics.Value(1, old)}},
			wantUsage: map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricMemory, Reason: metrics.ReasonStale,
				Detail: "measured at 2026-11-21T11:50:00Z, 10m0s before now, more than the 1m0s allowed"}},
		},
		"zero time is stale": {
			pods:         []*corev1.Pod{running},
			readings:     map[metrics.Key]metrics.Reading{app: {CPU: metrics.Value(0.5, time.Time{}), Memory: metrics.Value(1, fresh)}},
			wantUsage:    map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricCPU, Reason: metrics.ReasonStale, Detail: "the source gave no measurement time"}},
		},
		"adapter's own reason is kept": {
			pods: []*corev1.Pod{running},
			readings: map[metrics.Key]metrics.Reading{app: {
				CPU: metrics.Unusable(metrics.ReasonWarmingUp, "first sample"), Memory: metrics.Value(1, fresh),
			}},
			wantUsage:    map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricCPU, Reason: metrics.ReasonWarmingUp, Detail: "first sample"}},
		},
		"bad throttling alone keeps the usage": {
			pods: []*corev1.Pod{running},
			readings: map[metrics.Key]metrics.Reading{app: {
				CPU: metrics.Value(0.5, fresh), Memory: metrics.Value(1, fresh), Throttled: metrics.Value(math.NaN(), fresh),
			}},
			wantUsage:    map[metrics.Key]metrics.Usage{app: {Key: app, Time: fresh, CPU: 0.5, Memory: 1}},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricThrottling, Reason: metrics.ReasonInvalid, Detail: "value NaN"}},
		},
		"pending pod is not running": {
			pods:         []*corev1.Pod{builder.Pod("web").Namespace("ns").Container(builder.Container("app")).Phase(corev1.PodPending).Obj()},
			readings:     map[metrics.Key]metrics.Reading{app: good},
			wantUsage:    map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricAll, Reason: metrics.ReasonNotRunning, Detail: `pod phase is "Pending"`}},
		},
		"waiting container is not running": {
			pods: []*corev1.Pod{builder.Pod("web").Namespace("ns").Container(builder.Container("app")).Phase(corev1.PodRunning).
				ContainerStatus(corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}).Obj()},
			readings:     map[metrics.Key]metrics.Reading{app: good},
			wantUsage:    map[metrics.Key]metrics.Usage{},
			wantProblems: []metrics.Problem{{Key: app, Metric: metrics.MetricAll, Reason: metrics.ReasonNotRunning, Detail: "container is not running"}},
		},
		"sidecars are measured, classic init containers and unasked readings are not": {
			pods: []*corev1.Pod{withSidecar},
			readings: map[metrics.Key]metrics.Reading{
				app: good, proxy: good,
				{Namespace: "ns", Pod: "other", Container: "app"}: good,
			},
			wantUsage: map[metrics.Key]metrics.Usage{
				app:   {Key: app, Time: fresh, Window: 30 * time.Second, CPU: 0.5, Memory: 100 << 20},
				proxy: {Key: proxy, Time: fresh, Window: 30 * time.Second, CPU: 0.5, Memory: 100 << 20},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := metrics.Assemble(tc.pods, tc.readings, now, maxAge)
			if diff := cmp.Diff(tc.wantUsage, got.Usage); diff != "" {
				t.Errorf("usage (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantProblems, got.Problems); diff != "" {
				t.Errorf("problems (-want,+got):\n%s", diff)
			}
		})
	}
}

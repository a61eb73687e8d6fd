//go:build e2e

package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/internal/metrics/prometheus"
	"github.com/tailorhq/tailor/test/cluster"
)

// A policy's Prometheus queries, end to end: the manager reads the real
// Prometheus of the local cluster, and what a policy publishes in Off mode
// shows which query its usage came from.

// alwaysTwoCores is the manager's CPU query made to answer 2 cores for every
// container it has a series for, whatever the load: a recommendation of 2
// cores or more can only come from this query.
var alwaysTwoCores = prometheus.DefaultQueries().CPU + " * 0 + 2"

// offPolicy is a policy in Off mode selecting app=<app>, with the given
// metrics section.
func offPolicy(app string, m *v1alpha1.MetricsOverrides) func(*v1alpha1.TailorPolicySpec) {
	return func(s *v1alpha1.TailorPolicySpec) {
		s.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
		s.UpdatePolicy = &v1alpha1.UpdatePolicy{UpdateMode: v1alpha1.UpdateModeOff}
		s.Metrics = m
	}
}

// cpuTarget is the published CPU target of container app, if any.
func cpuTarget(p *v1alpha1.TailorPolicy) (resource.Quantity, bool) {
	if p.Status.Recommendation == nil {
		return resource.Quantity{}, false
	}
	for _, r := range p.Status.Recommendation.ContainerRecommendations {
		if q, ok := r.Target["cpu"]; ok && r.ContainerName == "app" {
			return q, true
		}
	}
	return resource.Quantity{}, false
}

func hasCPUTarget(p *v1alpha1.TailorPolicy) bool {
	_, ok := cpuTarget(p)
	return ok
}

func TestAutoscalePrometheusQueryOverrides(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 400) // a 200m burner raised from 50m
	url := os.Getenv("TAILOR_PROMETHEUS_URL")
	if url == "" {
		t.Skip("TAILOR_PROMETHEUS_URL is not set; run hack/addons/prometheus.sh up and set it to http://127.0.0.1:9090")
	}
	ns := newNamespace(t)
	// A 30s rate window: a new container's CPU is read once it has run two
	// of them (the default minute's took this test to 170s, the longest of
	// its phase), and which query answered (2 cores, or about 0.2) needs no
	// precision.
	c := startManagerWith(t, manager.Options{Namespaces: []string{ns}, MetricsSource: "prometheus", PrometheusURL: url, PrometheusRateWindow: 30 * time.Second})
	// 200m under a 50m request and no CPU limit: never throttled, so the
	// CPU recommendation is what the CPU query says plus a margin.
	createRunningPod(t, labelled(ns, "web", app().Args("--listen=:8080", "--cpu=200m", "--memory=24Mi").Requests("50m", "64Mi")))

	defaults := applyPolicy(t, c, ns, "defaults", offPolicy("web", nil))
	overridden := applyPolicy(t, c, ns, "overridden", offPolicy("web", &v1alpha1.MetricsOverrides{
		Prometheus: &v1alpha1.PrometheusQueries{CPU: alwaysTwoCores},
	}))
	broken := applyPolicy(t, c, ns, "broken", offPolicy("web", &v1alpha1.MetricsOverrides{
		Prometheus: &v1alpha1.PrometheusQueries{Memory: `max by (namespace, pod, container) (container_memory_working_set_bytes{namespace="{{.Namespace}"})`},
	}))

	empty := applyPolicy(t, c, ns, "empty", offPolicy("web", &v1alpha1.MetricsOverrides{
		Prometheus: &v1alpha1.PrometheusQueries{CPU: `sum by (namespace, pod, container) (tailor_no_such_metric{namespace="{{.Namespace}}"})`},
	}))

	t.Run("a query with no answer for the pods says so in RecommendationProvided", func(t *testing.T) {
		got := waitPolicy(t, c, empty.Namespace, empty.Name, time.Minute, "a RecommendationProvided condition", func(p *v1alpha1.TailorPolicy) bool {
			return meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionRecommendationProvided) != nil
		})
		cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionRecommendationProvided)
		if cond.Status != metav1.ConditionFalse || cond.Reason != "NoUsageYet" || !strings.Contains(cond.Message, "cpu Missing") {
			t.Errorf("RecommendationProvided = %s %s %q; want False NoUsageYet naming the missing cpu figure", cond.Status, cond.Reason, cond.Message)
		}
	})

	t.Run("a broken template makes the policy invalid, naming the query", func(t *testing.T) {
		got := waitPolicy(t, c, broken.Namespace, broken.Name, time.Minute, "a Ready condition", func(p *v1alpha1.TailorPolicy) bool {
			return meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady) != nil
		})
		ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		if ready.Status != metav1.ConditionFalse || ready.Reason != v1alpha1.ReasonInvalidPolicy ||
			!strings.HasPrefix(ready.Message, "spec.metrics.prometheus: the memory query is not a valid template") {
			t.Errorf("Ready = %s %s %q, want False %s naming the memory query", ready.Status, ready.Reason, ready.Message, v1alpha1.ReasonInvalidPolicy)
		}
	})

	// The override reaches Prometheus for its own policy, and only for it.
	over := waitPolicy(t, c, overridden.Namespace, overridden.Name, 4*time.Minute, "a CPU recommendation", hasCPUTarget)
	def := waitPolicy(t, c, defaults.Namespace, defaults.Name, 4*time.Minute, "a CPU recommendation", hasCPUTarget)
	overCPU, _ := cpuTarget(over)
	defCPU, _ := cpuTarget(def)
	t.Logf("CPU target with the manager's query %s, with the policy's query answering 2 cores %s", defCPU.String(), overCPU.String())
	if overCPU.Cmp(resource.MustParse("2")) < 0 {
		t.Errorf("policy %s recommends cpu %s, below the 2 cores its CPU query answers: its query was not used", overridden.Name, overCPU.String())
	}
	if defCPU.Cmp(resource.MustParse("1")) >= 0 {
		t.Errorf("policy %s without overrides recommends cpu %s for a container burning 200m: another policy's query leaked into it", defaults.Name, defCPU.String())
	}
	for _, p := range []*v1alpha1.TailorPolicy{over, def} {
		if ready := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady); ready == nil || ready.Status != metav1.ConditionTrue {
			t.Errorf("policy %s: Ready = %s, want True", p.Name, mustJSON(ready))
		}
	}
	// Still there: a valid policy never made the broken one valid.
	got := &v1alpha1.TailorPolicy{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(broken), got); err != nil {
		t.Fatal(err)
	}
	if meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady) || got.Status.Recommendation != nil {
		t.Errorf("policy %s with a broken template became Ready or recommended: %s", broken.Name, mustJSON(got.Status))
	}
}

func TestAutoscalePrometheusOverridesIgnoredWithoutPrometheus(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 300) // a 100m burner raised from 50m
	ns := newNamespace(t)
	c := startManager(t, ns) // reads the kubelet
	createRunningPod(t, labelled(ns, "web", app().Args("--listen=:8080", "--cpu=100m", "--memory=24Mi").Requests("50m", "64Mi")))
	p := applyPolicy(t, c, ns, "ignored", offPolicy("web", &v1alpha1.MetricsOverrides{
		Prometheus: &v1alpha1.PrometheusQueries{CPU: alwaysTwoCores},
	}))
	got := waitPolicy(t, c, p.Namespace, p.Name, 2*time.Minute, "a CPU recommendation", hasCPUTarget)
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	const want = "spec.metrics.prometheus is ignored: the manager reads usage from kubelet, not from Prometheus (--metrics-source=prometheus)"
	if ready == nil || ready.Status != metav1.ConditionTrue || !strings.Contains(ready.Message, want) {
		t.Errorf("Ready = %s, want True with a message containing %q", mustJSON(ready), want)
	}
	// Ignored indeed: the recommendation is the kubelet's figure, not the
	// 2 cores the query would answer.
	if cpu, _ := cpuTarget(got); cpu.Cmp(resource.MustParse("1")) >= 0 {
		t.Errorf("cpu target %s for a container burning 100m: the ignored query was used", cpu.String())
	}
}

package policy

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Prometheus metrics, served by the manager's metrics endpoint next to
// controller-runtime's own (reconcile latency, work queue depth).
var (
	resizesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tailor_resizes_total",
		Help: "Resizes tailor decided on, by result: sent, refused (by the planner or the apiserver), deferred (not sent: no room on the node).",
	}, []string{"namespace", "policy", "result"})
	resizesInFlight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tailor_resizes_in_flight",
		Help: "Resizes sent and not yet finished by the kubelet.",
	}, []string{"namespace", "policy"})
	evictionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tailor_evictions_total",
		Help: "Evictions of InPlaceOrRecreate policies, by result: evicted, or blocked (by a PodDisruptionBudget, RBAC or a vanished pod).",
	}, []string{"namespace", "policy", "result"})
	recommendationGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tailor_recommendation",
		Help: "Current recommended target per container: cpu in cores, memory in bytes.",
	}, []string{"namespace", "policy", "container", "resource"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(resizesTotal, resizesInFlight, evictionsTotal, recommendationGauge)
}

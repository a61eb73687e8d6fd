package policymetrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Prometheus metrics, served by the manager's metrics endpoint next to
// controller-runtime's own (reconcile latency, work queue depth).
var (
	ResizesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tailor_resizes_total",
		Help: "Resizes tailor decided on, by result: sent, refused (by the planner or the apiserver), deferred (not sent: no room on the node), failed (an apiserver error a retry may fix); held states count once, not once per sync.",
	}, []string{"namespace", "policy", "result"})
	ResizesInFlight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tailor_resizes_in_flight",
		Help: "Resizes sent and not yet finished by the kubelet.",
	}, []string{"namespace", "policy"})
	EvictionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tailor_evictions_total",
		Help: "Evictions of InPlaceOrRecreate policies, by result: evicted, or blocked (by a PodDisruptionBudget, RBAC or a vanished pod).",
	}, []string{"namespace", "policy", "result"})
	ReactionSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "tailor_reaction_seconds",
		Help: "Seconds from the usage sample (or OOM kill) that first called for a raise of a pod to the kubelet reporting that raise applied.",
		// The kubelet source reacts in 10-15 s (cAdvisor's housekeeping
		// bounds it), metrics-server in about 30 s.
		Buckets: []float64{1, 2.5, 5, 7.5, 10, 12.5, 15, 20, 30, 45, 60, 120, 300},
	}, []string{"namespace", "policy"})
	// SyncsTotal says a policy is being looked after: its rate is how
	// often it is synced (the sync period, plus wake-ups and pod events),
	// and one that stops growing is a policy no manager syncs.
	SyncsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tailor_policy_syncs_total",
		Help: "Syncs of a policy that read its pods and usage and decided (whether or not anything was to be done).",
	}, []string{"namespace", "policy"})
	// MetricsSourceUp is what an alert on a source down for minutes reads:
	// the Ready condition and the MetricsUnavailable event say it per
	// policy, not to a monitoring stack.
	MetricsSourceUp = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tailor_metrics_source_up",
		Help: "1 when the policy's last sync read usage from its metrics source, 0 when the source did not answer (nothing is lowered meanwhile).",
	}, []string{"namespace", "policy"})
	CheckpointWritesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tailor_checkpoint_writes_total",
		Help: "Writes of a policy's TailorCheckpoint (what it learnt, restored after a restart), by result: written or failed.",
	}, []string{"namespace", "policy", "result"})
	// CanaryRollbacksTotal is what an alert on lowerings that hurt reads:
	// the events and the Canary condition say it per policy.
	CanaryRollbacksTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tailor_canary_rollbacks_total",
		Help: "Canary pods raised back in place because a guardrail tripped after their lowering (behavior.scaleDown.canary), by guardrail: OOMKill, Restart, Readiness, CPUThrottling, MemoryNearLimit, or Query (canary.guardrails.queries; the event names which).",
	}, []string{"namespace", "policy", "guardrail"})
	// LoweringsHeld is what a dashboard of "savings waiting for a window"
	// reads; the LoweringsHeld condition says when they go.
	LoweringsHeld = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tailor_lowerings_held",
		Help: "Pods whose lowering waits at the policy's last sync for a change window (reason OutsideWindow), the policy's hourly lowering budget (reason BudgetSpent) or its namespace's (reason NamespaceBudgetSpent): behavior.scaleDown.windows, budget.pods and budget.namespacePods.",
	}, []string{"namespace", "policy", "reason"})
	// UsageRejected is what an alert on a lying or broken source (a
	// node's agent or kubelet reporting more than a container can use)
	// reads; the Ready condition names the containers held.
	UsageRejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tailor_usage_rejected_total",
		Help: "Container usage readings rejected as garbage before anything learnt from them, by metrics source and reason: Invalid (NaN, infinite, negative, a throttled share outside [0, 1]), AboveLimit (more than the container's or its pod's limit allows), AboveNodeCapacity (more than its node has).",
	}, []string{"source", "reason"})
	Recommendation = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tailor_recommendation",
		Help: "Current recommended target per container: cpu in cores, memory in bytes.",
	}, []string{"namespace", "policy", "container", "resource"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(ResizesTotal, ResizesInFlight, EvictionsTotal, ReactionSeconds, SyncsTotal, Recommendation,
		MetricsSourceUp, CheckpointWritesTotal, CanaryRollbacksTotal, LoweringsHeld, UsageRejected)
}

// Forget drops a deleted policy's series, so a gauge such as the
// resizes in flight does not stand at its last value for ever.
func Forget(key types.NamespacedName) {
	labels := prometheus.Labels{"namespace": key.Namespace, "policy": key.Name}
	for _, v := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{ResizesTotal, ResizesInFlight, EvictionsTotal, ReactionSeconds, SyncsTotal, Recommendation, MetricsSourceUp, CheckpointWritesTotal, CanaryRollbacksTotal, LoweringsHeld} {
		v.DeletePartialMatch(labels)
	}
}

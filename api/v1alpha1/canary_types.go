package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Canary is how a lowering is tried on a few pods before the rest: the new,
// lower size is applied in place to the canary pods (chosen by name among
// the pods the lowering is for), the guardrails are watched on them for
// window, and then the other pods follow, as maxConcurrentResizes allows.
// When a guardrail trips, the canary pods are raised back in place at once
// to what they had (neither minResizeInterval nor maxConcurrentResizes
// holds that), the workload's lowerings are held for the backoff, and new
// pods are not sized below what the canary pods were raised back to while
// it lasts. A canary that held proves its values: later lowerings to them
// or above need no canary, and a lowering below them starts another.
type Canary struct {
	// pods is how many of the workload's pods are lowered first: a count
	// such as 1, or a percent of the workload's running pods such as
	// "10%", rounded up; at least one pod and at most 100. Default 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? (self >= 1 && self <= 100) : self.matches('^([1-9][0-9]?|100)%$')",message="pods must be a count from 1 to 100 or a percent from 1% to 100%, such as 10%"
	Pods *intstr.IntOrString `json:"pods,omitempty"`

	// window is how long the canary pods are watched after their lowering
	// before the other pods follow, between 30s and 24h; default 10m.
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) >= duration('30s') && duration(self) <= duration('24h')",message="window must be a duration such as 5m or 1h, between 30s and 24h"
	Window *metav1.Duration `json:"window,omitempty"`

	// guardrails are what rolls a canary back; each is on unless turned
	// off here.
	// +optional
	// +kubebuilder:default={}
	Guardrails *CanaryGuardrails `json:"guardrails,omitempty"`

	// backoff is how long the workload's lowerings are held after a
	// rollback.
	// +optional
	// +kubebuilder:default={}
	Backoff *CanaryBackoff `json:"backoff,omitempty"`
}

// CanaryGuardrails are the built-in guardrails, read from what tailor
// already sees of the canary pods: their status and their usage. Each is
// judged on what happened after the canary's lowering only.
type CanaryGuardrails struct {
	// oomKill trips when a canary container is killed for memory
	// (OOMKilled, or killed by SIGKILL under a memory limit). Default true.
	// +optional
	// +kubebuilder:default=true
	OOMKill *bool `json:"oomKill,omitempty"`

	// restart trips when a canary container restarts, whatever the cause.
	// Default true.
	// +optional
	// +kubebuilder:default=true
	Restart *bool `json:"restart,omitempty"`

	// readiness trips when a canary pod that was Ready when it was lowered
	// no longer is. Default true.
	// +optional
	// +kubebuilder:default=true
	Readiness *bool `json:"readiness,omitempty"`

	// cpuThrottling trips when a canary container is throttled in more
	// than cpuThrottlingPercent of its CFS periods, measured after the
	// lowering (only a container with a CPU limit is throttled). Default
	// true.
	// +optional
	// +kubebuilder:default=true
	CPUThrottling *bool `json:"cpuThrottling,omitempty"`

	// cpuThrottlingPercent is the share of CFS periods, in percent
	// (1-100), above which cpuThrottling trips. Default 20.
	// +optional
	// +kubebuilder:default=20
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	CPUThrottlingPercent *int32 `json:"cpuThrottlingPercent,omitempty"`

	// memoryNearLimit trips when a canary container's working set comes
	// within memoryMarginPercent of its memory limit (a container without
	// a memory limit is not judged by it). With the node agent the working
	// set is read each second. Default true.
	// +optional
	// +kubebuilder:default=true
	MemoryNearLimit *bool `json:"memoryNearLimit,omitempty"`

	// memoryMarginPercent is how close to its memory limit, in percent of
	// the limit (1-50), a working set trips memoryNearLimit. Default 5.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	MemoryMarginPercent *int32 `json:"memoryMarginPercent,omitempty"`

	// queries are custom guardrails: PromQL queries tailor asks the
	// manager's Prometheus (--prometheus-url) each sync while the canary
	// pods are watched, rendered for the canary pods and, for a relative
	// one, for the workload's other pods. A query that cannot be answered
	// (Prometheus down, an empty result, several series, NaN) neither
	// trips nor passes: the canary is not promoted until every query
	// answers, and the Canary condition says which does not.
	//
	// The manager asks with its own credentials, so each query, rendered,
	// is confined to the policy's namespace: namespace="<the namespace>"
	// is put on every series selector, and a query that could read
	// another namespace makes the policy Ready=False with reason
	// QueryOutsideNamespace. At most 4.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=4
	Queries []CanaryQuery `json:"queries,omitempty"`
}

// CanaryQuery is a custom guardrail: a PromQL query whose one value is
// compared with a threshold, or with the same query's value for the
// workload's other pods (the siblings), as progressive-delivery tools
// (Argo Rollouts, Flagger) judge a new version, here judging a resize.
//
// +kubebuilder:validation:XValidation:rule="has(self.threshold) != has(self.siblingsPercent)",message="a query guardrail needs exactly one of threshold (an absolute value) and siblingsPercent (relative to the workload's other pods)"
// +kubebuilder:validation:XValidation:rule="!has(self.siblingsPercent) || !has(self.tripsWhen) || self.tripsWhen != 'Below' || self.siblingsPercent <= 100",message="with tripsWhen Below, siblingsPercent is at most 100"
type CanaryQuery struct {
	// name says which guardrail tripped, in events and the Canary
	// condition: lowercase letters, digits and '-', such as latency-p99.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// query is a PromQL template that must return one value: a scalar or
	// an instant vector of one sample (aggregate with sum, max or
	// histogram_quantile). It is rendered with {{.Namespace}} (the
	// policy's namespace), {{.Pods}} (a regular expression matching
	// exactly the pods judged, for pod=~"{{.Pods}}") and {{.Since}} (the
	// time since the canary pods' lowering as a PromQL duration, such as
	// 150s, for a range that reads only what followed it). For example:
	// histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{namespace="{{.Namespace}}", pod=~"{{.Pods}}"}[2m])))
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Query string `json:"query"`

	// tripsWhen says which way is bad: Above (a latency, an error rate)
	// or Below (a success rate, a throughput). Default Above.
	// +optional
	// +kubebuilder:default=Above
	TripsWhen CanaryQueryTrips `json:"tripsWhen,omitempty"`

	// threshold makes the guardrail absolute: it trips when the canary
	// pods' value is above (or below) this number, such as 0.5 or 1e-3.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$`
	Threshold *string `json:"threshold,omitempty"`

	// siblingsPercent makes the guardrail relative: the query is also
	// rendered for the workload's other pods, and the guardrail trips when
	// the canary pods' value is more than this percent above (or below)
	// theirs (0-1000; at most 100 with Below). 20 reads "the canary's p99
	// latency is not more than 20% above its siblings'". Siblings at 0
	// trip on any canary value above (or below) 0; a workload with no pod
	// besides the canary pods has nothing to compare with, which holds the
	// canary as an unanswered query does.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	SiblingsPercent *int32 `json:"siblingsPercent,omitempty"`
}

// CanaryQueryTrips is the direction in which a query guardrail trips.
// +kubebuilder:validation:Enum=Above;Below
type CanaryQueryTrips string

const (
	CanaryQueryAbove CanaryQueryTrips = "Above"
	CanaryQueryBelow CanaryQueryTrips = "Below"
)

// CanaryBackoff is how long a rollback holds the workload's lowerings: the
// first one initial, each that follows without a canary promoted in between
// twice the last, at most max.
//
// +kubebuilder:validation:XValidation:rule="!has(self.initial) || !has(self.max) || !self.initial.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') || !self.max.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self.initial) <= duration(self.max)",message="backoff.initial must not exceed backoff.max"
type CanaryBackoff struct {
	// initial is the hold after a first rollback, between 1m and 168h;
	// default 1h.
	// +optional
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) >= duration('1m') && duration(self) <= duration('168h')",message="initial must be a duration such as 30m or 2h, between 1m and 168h"
	Initial *metav1.Duration `json:"initial,omitempty"`

	// max caps the hold, between 1m and 720h; default 24h.
	// +optional
	// +kubebuilder:default="24h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) >= duration('1m') && duration(self) <= duration('720h')",message="max must be a duration such as 24h, between 1m and 720h"
	Max *metav1.Duration `json:"max,omitempty"`
}

// ConditionCanary is True while a canary holds the workload's lowerings
// back (its pods are watched, or a rollback's backoff stands) and False
// otherwise; the reason says which, and the message what was learnt. A
// policy without behavior.scaleDown.canary has no such condition.
const ConditionCanary = "Canary"

// Reasons of the Canary condition.
const (
	// CanaryReasonIdle: no lowering waits for a canary.
	CanaryReasonIdle = "Idle"
	// CanaryReasonWatching: canary pods were lowered and are watched.
	CanaryReasonWatching = "Watching"
	// CanaryReasonPromoted: the last canary held through its window.
	CanaryReasonPromoted = "Promoted"
	// CanaryReasonRolledBack: a guardrail tripped, the canary pods were
	// raised back, and the backoff holds lowerings.
	CanaryReasonRolledBack = "RolledBack"
)

// Bounds of what a policy makes the manager ask its Prometheus, which the
// CRD's markers hold new specs to and Validate holds a spec stored before
// them to.
const (
	// MaxCanaryQueries bounds a canary's query guardrails. Each is asked
	// for the canary pods and, when relative, for their siblings, every
	// sync while a canary is watched: four make at most eight requests a
	// sync, with the three or four the usage queries make. Progressive
	// delivery judges a version by a handful of signals (latency, errors,
	// saturation, throughput); a fifth is better aggregated into one.
	MaxCanaryQueries = 4
	// MaxQueryLength bounds a policy's PromQL template, in bytes. The
	// docs' guardrail, a p99 of a histogram's rate by pod, is about 150
	// bytes and the manager's throttling query about 400; 1 KiB leaves
	// room for both sides of a ratio with their matchers, and no room for
	// a query built to make Prometheus work hard.
	MaxQueryLength = 1024
)

// ReasonGuardrailsNeedPrometheus: the Ready condition's reason when a
// policy's canary has query guardrails and the manager has no Prometheus to
// ask (--prometheus-url): the policy is left alone, since its canaries
// could not be judged.
const ReasonGuardrailsNeedPrometheus = "GuardrailsNeedPrometheus"

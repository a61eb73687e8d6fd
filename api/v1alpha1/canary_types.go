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
}

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

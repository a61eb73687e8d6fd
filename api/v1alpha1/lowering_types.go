package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ChangeWindow is a time when lowerings may start: it opens at each time
// its schedule names and stays open for duration. Lowerings (a canary's
// included) are sent only while some window of the policy is open; raises,
// a canary's rollback and the end of a startup boost never wait for one.
// A lowering already sent is not taken back when the window closes.
type ChangeWindow struct {
	// schedule is when the window opens, in the standard five-field cron
	// format (minute hour day-of-month month day-of-week, as a CronJob's
	// schedule), e.g. "0 22 * * 1-5" for 22:00 on weekdays, or one of
	// @hourly, @daily, @weekly, @monthly, @yearly. The time zone is
	// timeZone, not a CRON_TZ= prefix.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[^ @=]+( +[^ @=]+){4})$')",message="schedule must be five cron fields such as '0 22 * * 1-5' or one of @hourly, @daily, @weekly, @monthly, @yearly; set the time zone in timeZone"
	Schedule string `json:"schedule"`

	// duration is how long the window stays open after each opening, as
	// elapsed time (a window that opens before a daylight-saving change
	// still lasts this long), between 1m and 168h.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) >= duration('1m') && duration(self) <= duration('168h')",message="duration must be a duration such as 30m or 8h, between 1m and 168h"
	Duration metav1.Duration `json:"duration"`

	// timeZone is the IANA time zone the schedule is read in, such as
	// Europe/Berlin; default UTC. A name the manager's time zone database
	// does not know makes the policy InvalidPolicy (Ready False).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*$`
	TimeZone *string `json:"timeZone,omitempty"`
}

// LoweringBudget caps how many pods are lowered in any rolling hour: the
// policy's own (pods), the namespace's (namespacePods), or both. It counts
// pods, not resizes: a pod lowered twice within the hour counts once.
// Raises and a canary's rollback are never counted nor held; a canary pod's
// lowering is counted like any other. What was lowered is kept in each
// policy's TailorCheckpoint, so a manager restart does not grant the hour
// again.
// +kubebuilder:validation:XValidation:rule="has(self.pods) || has(self.namespacePods)",message="budget needs pods, namespacePods or both"
type LoweringBudget struct {
	// pods is how many of the policy's pods may be lowered per rolling
	// hour: a count such as 2, or a percent of its running pods such as
	// "10%", rounded up (so at least one pod); at most 1000 either way.
	// It is the policy's own budget: two policies in one namespace each
	// have theirs. Unset: only namespacePods caps the policy.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? (self >= 1 && self <= 1000) : self.matches('^([1-9][0-9]?|100)%$')",message="pods must be a count from 1 to 1000 or a percent from 1% to 100%, such as 10%"
	Pods *intstr.IntOrString `json:"pods,omitempty"`

	// namespacePods is how many of the namespace's pods may be lowered per
	// rolling hour by every tailor policy of the namespace together: a
	// count such as 5, or a percent such as "10%" of the namespace's
	// running pods (all of them, not only this policy's), rounded up (so
	// at least one pod); at most 1000 either way. The policy lowers a pod
	// only while the pods lowered within the last hour by any policy of
	// the namespace, its own included, leave room. Each policy that sets
	// it is held by its own value: two policies may set different ones,
	// and a policy that does not set it is not held by another's (its
	// lowerings are still counted in the others').
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? (self >= 1 && self <= 1000) : self.matches('^([1-9][0-9]?|100)%$')",message="namespacePods must be a count from 1 to 1000 or a percent from 1% to 100%, such as 10%"
	NamespacePods *intstr.IntOrString `json:"namespacePods,omitempty"`
}

// ConditionLoweringsHeld is True while a change window or the lowering
// budget (behavior.scaleDown.windows, behavior.scaleDown.budget) holds a
// lowering back, with a message saying when the next window opens or when
// the budget frees, and False otherwise. A policy with neither has no such
// condition.
const ConditionLoweringsHeld = "LoweringsHeld"

// Reasons of the LoweringsHeld condition.
const (
	// LoweringsReasonOutsideWindow: no change window is open.
	LoweringsReasonOutsideWindow = "OutsideWindow"
	// LoweringsReasonBudgetSpent: the pods lowered in the last hour use
	// up the budget.
	LoweringsReasonBudgetSpent = "BudgetSpent"
	// LoweringsReasonNamespaceBudgetSpent: the namespace's pods lowered in
	// the last hour, by every policy of the namespace, use up the
	// namespace budget (budget.namespacePods).
	LoweringsReasonNamespaceBudgetSpent = "NamespaceBudgetSpent"
	// LoweringsReasonAllowed: nothing waits for a window or the budget.
	LoweringsReasonAllowed = "Allowed"
)

// Package limits is behavior.scaleDown.windows and budget, a gate on a
// policy's lowerings: outside every change window nothing is lowered, and
// within one no more pods are lowered per BudgetPeriod than the policy's
// budget and its namespace's (budget.namespacePods, counted across the
// namespace's policies) allow.
//
// It is a package of its own because it counts across syncs and policies
// (Lowered, LoweredBy) and reads the clock against cron schedules, which
// nothing else of the decision does; it holds lowerings as the canary
// does, behind the same lowering.Gate, without either knowing the other.
package limits

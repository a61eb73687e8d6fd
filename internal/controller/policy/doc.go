// Package policy is the TailorPolicy controller. Each sync of a policy
// (Reconcile) gathers what it reads (gather.go: its pods by owner, one usage
// read for all of them, the HPAs, VPAs and namespace rules that hold
// requests, its state, restored from its TailorCheckpoint by checkpoint.go),
// has the workload's model learn and advise (internal/advise), hands
// everything to the pure autoscale.DecideSync, then carries the decision out
// (act.go, recreate.go, unschedulable.go) and writes status once, at the end
// (status.go). The rules live in internal/advise, internal/autoscale,
// internal/recommend and internal/resize; this package is the plumbing
// around them.
package policy

// Package policy is the TailorPolicy controller. Each sync of a policy
// gathers (gather.go) its pods, one usage read for all of them, the nodes
// they run on and what was learnt of the workload (restored from its
// TailorCheckpoint, checkpoint.go), feeds the workload's recommender states
// (learn.go), hands everything to the pure autoscale.DecidePolicy, then
// carries the decision out (act.go, recreate.go) and writes status once
// (status.go). The rules live in internal/autoscale, internal/recommend and
// internal/resize; this package is the plumbing around them.
package policy

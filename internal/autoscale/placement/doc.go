// Package placement decides about pods that do not fit where they are:
// a running pod whose raise finds no room on its node, evicted to be
// recreated larger where some node can hold it (DecideRecreate,
// Placeable), and a pod tailor sized that no node takes, replaced by one
// created smaller (DecideStuck, NewPodRoom).
//
// It is apart from the fleet's order because it reads what that order does
// not: every node with its pods, the workload's owner and template, and
// the eviction's pace across syncs. It builds on internal/autoscale/fleet
// (a pod's PodInput) and internal/autoscale/newpods (a replacement is
// created as a new pod is), and neither imports it.
package placement

// Package fleet decides a policy's sync over all its pods at once
// (DecidePolicy): raises before lowerings, the longest waiting first, as
// many as maxConcurrentResizes leaves room for, each node's room and the
// namespace's quotas shared between the resizes chosen on it, and the
// resize planner's verdict on each.
//
// It is the leaf the other parts of the decision build on: the gates that
// hold lowerings back rewrite its input and complete its decision, the
// recreation of a pod short of room starts from its PodInput, and
// internal/autoscale joins them into a sync. Keeping the order here, apart
// from them, lets each of those depend on it without the order depending
// on any of them.
package fleet

// Package autoscale decides what tailor asks Kubernetes for. One pod's
// change is podchange.Decide's (which keeps tailor's promises to that pod:
// QoS class unchanged, no restart the policy forbids, no limit added,
// memory never below what the container uses, bounds and steps respected),
// who else has a say over a pod is internal/ownership's and a startup boost
// internal/boost's; DecidePolicy decides a whole policy's sync over all its pods
// (order, maxConcurrentResizes, each node's room shared between the raises
// on it, the planner's verdict); DecideRecreate decides when a pod that has
// no room in place is evicted to be recreated larger; Admit plans what a
// new pod is created with; all of them within the namespace's LimitRanges
// and quotas (internal/nsrules). DecideSync is the one decision of a sync:
// everything it asks Kubernetes for (resizes and their field managers, the
// admission entry, recreation steps, unschedulable pods to replace), each
// held thing with its reason, the lowerings a canary, a closed change window
// or a spent lowering budget holds among them. All of it is pure: the controller gathers the
// input and carries the decision out.
package autoscale

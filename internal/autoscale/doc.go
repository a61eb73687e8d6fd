// Package autoscale decides, for one pod under one TailorPolicy, what to ask
// Kubernetes for: it turns the recommender's per-container targets into a
// resize.Desired while keeping tailor's promises (QoS class unchanged, no
// restart the policy forbids, memory never below what the container uses,
// bounds and pacing respected), and says why it held anything back. It is
// pure: the controller gathers the pod, policy, targets and usage, and the
// resize planner still has the last word on what Kubernetes will accept.
package autoscale

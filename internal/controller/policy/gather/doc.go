// Package gather reads what a sync of a TailorPolicy works from: the pods
// its selector matches with their controller chains and who else claims
// them (Select), then, for the pods that are the policy's, one usage read,
// the canary's query guardrails, the HorizontalPodAutoscalers, the
// namespace's rules and lowerings, and the nodes (Read, Nodes,
// NodesWithPods).
//
// It is separate so that reading cannot decide: what gather returns are
// facts (which pods, whose claims, which HPAs), and the judgements made of
// them (which pods are the policy's, which requests an HPA holds, whether
// a waiting pod is stuck) are the decision's, in the controller package
// and the pure packages it calls, where tests give them facts directly.
// It changes nothing, in the cluster or in the controller's memory
// (package store), which it only reads.
package gather

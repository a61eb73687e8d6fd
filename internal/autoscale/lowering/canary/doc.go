// Package canary is behavior.scaleDown.canary, a gate on a policy's
// lowerings: a few pods are lowered first and watched through a window for
// OOM kills, restarts, lost readiness, throttling, a working set near its
// limit and the policy's query guardrails; the others follow once it is
// promoted, and a tripped guardrail rolls the canary pods back and holds
// every lowering for a backoff. Floor keeps new pods and the recommendation
// above what no canary has proven.
//
// It is a package of its own because its state outlives the sync (the
// controller keeps it in the policy's checkpoint) and it is the only part
// of the decision that reads how pods fared after a resize.
package canary

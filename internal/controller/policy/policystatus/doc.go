// Package policystatus writes a TailorPolicy's status: the workload's
// recommendation, the pods' last resizes, the recreations new pods read at
// admission, and the conditions (Ready, RecommendationProvided,
// ResizesBlocked, RequestsHeldForHPA, JVMHeapRestartAdvised, Canary,
// LoweringsHeld), once per
// sync, at its end.
//
// It is separate because status is the sync's one report to users and to
// the admission policy, and must be deterministic (sorted, bounded,
// written only when it changed) whatever order gather, decide and act
// worked in: Fill takes what they found as a plain Input and nothing else.
package policystatus

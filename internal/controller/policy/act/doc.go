// Package act carries out a TailorPolicy sync's decision: it sends the
// resizes, evicts the pods InPlaceOrRecreate replaces, deletes the
// unschedulable pods tailor sized once their replacements would fit, and
// says in events, once per state, what it did and what it held back.
//
// It is separate because it is the one step that changes the cluster, and
// because it must not decide: what it does comes whole from the Decision
// it is given (whether the policy sizes its pods at all, when to look
// again, which containers are at risk of an OOM kill), so that a test of
// the decision is a test of what act will do.
package act

// Package resize predicts what Kubernetes will do with an in-place pod resize
// before tailor sends it: it turns (pod, desired resources, node state, the
// namespace's LimitRanges and ResourceQuotas, server version) into the exact
// patch for the pod "resize" subresource plus the apiserver's verdict
// (accepted or refused, naming the rule) and the kubelet's likely outcome (in
// place, restart, deferred, infeasible). It is the one engine the CLI's
// preflight and the controller ask; the namespace's rules it judges through
// internal/nsrules, which never imports it.
//
// It is pure on purpose: no client, no clock, no feature-gate lookups. Every
// rule mirrors a named place in the Kubernetes v1.37.1 source (see rules.go),
// and the oracle test in test/oracle checks the verdicts against a real apiserver.
package resize

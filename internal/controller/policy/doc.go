// Package policy is the TailorPolicy controller: its wiring
// (SetupWithManager, the predicates that only filter, the reconcile loop)
// and the order of a sync's steps, each of which can be tested alone:
//
//   - gather (package gather, composed in pipeline.go) reads, and only
//     reads: the spec parsed once (gather.ParseSpec), the pods, who claims
//     them, usage, HPAs, namespace rules, nodes;
//   - the judgements made of those facts (owners.go: which pods are the
//     policy's; decide.go judge: the requests HPAs hold, the room a new pod
//     finds);
//   - advise (advise.go) has the workload's model learn and advise;
//   - decide (decide.go) hands everything to the pure autoscale.DecideSync,
//     in the namespace's turn when a namespace budget counts, and makes of
//     its answer the act.Decision act carries out (memoryrisk.go: the
//     containers left at risk of an OOM kill);
//   - act (package act) carries the decision out without judging it again;
//   - status (package policystatus) is written once, at the end.
//
// The controller's memory between syncs, and its checkpoints, are package
// store; the rules live in internal/advise, internal/autoscale,
// internal/recommend and internal/resize: this package is the plumbing
// around them.
package policy

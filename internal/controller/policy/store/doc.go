// Package store is the TailorPolicy controller's memory between syncs: per
// policy, what the workload's model learnt and what tailor did to each pod
// (Store, PolicyState, PodState), where that is kept across restarts (its
// TailorCheckpoint: Checkpoints), and what this process lowered in each
// namespace a namespace budget counts (Ledger).
//
// It is separate because every step of a sync reads it (gather its
// selector, advise its model, decide its canary and budget, act and status
// what each pod went through) while none of them owns it: kept in one
// step's package, the others would import that step for its state alone,
// and a restart's recovery (Restore) would sit with the code that changes
// the cluster.
package store

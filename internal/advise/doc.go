// Package advise is what tailor learns about a workload and what it advises
// for each of its pods. A Model keeps one recommender state per container
// name, fed from every pod of the workload (usage, OOM kills, restarts), and
// turns it into each pod's targets, with the startup boost's, and into the
// workload's recommendation that status and new pods read. One node's
// figures teach the workload at most NodeLead times what its other nodes
// show; a pod leading beyond that learns in a state of its own, which sizes
// it alone.
//
// It is pure: no Kubernetes client, no events, no metrics registry, and time
// is always an argument. The controller gathers what it reads, calls Learn
// and Advise, and checkpoints the states (recommend.State.MarshalBinary).
package advise

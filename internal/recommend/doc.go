// Package recommend decides how much CPU and memory one container should be
// given. It is a pure library: no Kubernetes clients, no clock (every call
// takes now), and a small fixed-size state per container, so a controller
// can keep one per workload container in memory, checkpoint it
// (State.MarshalBinary, Recommender.Restore), and tests and the replay
// benchmark can drive it through time exactly. Recommend only reads the
// state, so one state advises every pod of a workload.
//
// It is asymmetric on purpose: pressure (a usage peak near the limit,
// throttling, an OOM kill) raises at once, while a lower recommendation must
// hold through a stabilization window and leave a hysteresis band before it
// is applied, and then only by a bounded step.
package recommend

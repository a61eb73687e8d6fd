// Package actuator applies a resize plan to a live pod and follows it until
// the kubelet has finished or said why it cannot. It is the only code that
// writes resizes: the CLI and the autoscaling controller both call it, so
// both report Deferred, Infeasible, admission refusals and errors the same way.
// Deciding what to ask for is internal/resize's job; this package only asks.
package actuator

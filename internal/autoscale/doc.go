// Package autoscale is the one decision of a policy's sync (DecideSync):
// everything tailor asks Kubernetes for (resizes and their field managers,
// the admission entry, recreation steps, unschedulable pods to replace,
// room asked of other pods and given to them),
// and each thing held back with its reason.
//
// It composes the packages below it, each one concern: one pod's change is
// internal/podchange's, the order across a policy's pods
// internal/autoscale/fleet's, the gates that hold lowerings back (a canary,
// change windows and lowering budgets) internal/autoscale/lowering's, new
// pods internal/autoscale/newpods', pods short of room
// internal/autoscale/placement's, and room made for them in place by the
// lower-priority pods beside them internal/autoscale/room's. Only the joining is here: which of them
// runs, on what, in which order, so that each can be read and tested on
// its own and none imports the sync. All of it is pure: the controller
// gathers the input and carries the decision out.
package autoscale

// Package resize is `tailor resize`: one pod resized in place by hand, after a
// preflight that says what the apiserver and the kubelet will make of it.
// It is the planner (internal/resize) put in front of a person, so its
// prediction, the verdict it is checked against and its exit codes are what
// a script or an operator decides on.
package resize

// Package run holds the verbs that do not return: `tailor manager`, the
// autoscaler, and `tailor agent`, the node agent. They share what a
// long-running process needs and a one-shot verb does not: structured
// logging through one logger for controller-runtime and client-go, and a
// Go heap sized to the container.
package run

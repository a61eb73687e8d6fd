// Package metrics is what tailor knows about a container's usage and how far
// it can trust it. Sources (metrics-server, Prometheus, the kubelet) live in
// sub-packages and all answer with a Result: usable samples, plus a typed
// Problem for every container whose data is missing, stale or garbage, so the
// controller holds that container and says why instead of scaling on nothing.
// Events reads OOM kills and restarts from pod status. Everything here is pure:
// time is an argument.
package metrics

// Package metrics proves tailor's metrics sources against the real things on
// the local cluster: loadgen pods burn a known CPU and hold known memory, and
// each source (kubelet, metrics-server, Prometheus) must report them within a
// band, show CFS throttling, and say how fresh its data is and how long a
// load step takes to show. Built only with the e2e tag.
package metrics

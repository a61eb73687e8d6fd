// Package agent is tailor's node agent: it reads the cgroup of every pod
// container on its node every second, keeps the last few samples of each,
// and pushes what it saw to the managers: every few seconds, and at once
// when a container crosses an urgent threshold (throttled, memory on
// course for its limit, memory stalls), so the manager decides for that
// pod now rather than at its next sync. It resizes nothing and reads no
// Kubernetes object but the EndpointSlices that say where the managers
// are and the ConfigMap holding the CA it checks them by (Trust: it pushes
// over TLS only); the manager maps pod UIDs and container IDs to pods.
//
// Collector is the pure part (samples in, figures and urgency out, time
// passed in); Run adds the ticker, the reads and the pushes.
package agent

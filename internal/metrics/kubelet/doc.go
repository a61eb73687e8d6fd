// Package kubelet reads container usage straight from each node's kubelet
// (/metrics/resource, and /metrics/cadvisor for CFS throttling) through the
// apiserver's node proxy: no add-on to install and the freshest data there
// is. The kubelet exports counters, not rates, so the Source keeps each
// container's previous sample and its first answer for a container is
// "warming up", never a made-up zero. One read of a node serves every
// policy that needs it for a few seconds, and the nodes are read
// concurrently with a bound, so a sync pass reads each node about once.
package kubelet

// Package kubelet reads container usage straight from each node's kubelet
// (/metrics/resource, and /metrics/cadvisor for CFS throttling): no add-on
// to install and the freshest data there is. By default (Direct) each
// kubelet is read on its own port, as metrics-server reads it, which the
// kubelet authorizes as get on nodes/metrics; reading through the
// apiserver's node proxy (APIServerProxy) needs nodes/proxy, which reaches
// every kubelet endpoint. The kubelet exports counters, not rates, so the
// Source keeps each container's previous sample and its first answer for a
// container is "warming up", never a made-up zero. One read of a node
// serves every policy that needs it for a few seconds, the nodes are read
// concurrently with a bound, and a page larger than a cap is refused
// unread.
package kubelet

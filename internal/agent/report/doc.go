// Package report is what the node agent sends the manager: one report per
// push, holding the newest figures of every pod container on the agent's
// node, read from its cgroup. The agent knows containers by pod UID and
// runtime container ID only (it reads no Kubernetes objects); the manager,
// which caches the pods, maps them to namespaces, pods and containers. It
// also says how an agent knows it talks to a manager: over TLS, for
// ServerName, against the CA bundle published under CABundleKey.
package report

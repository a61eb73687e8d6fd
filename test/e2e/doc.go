// Package e2e proves tailor's assumptions and behaviour against a real
// kube-apiserver and kubelet: the local cluster that hack/cluster.sh starts.
// Tests read the container's cgroup files on this host and the pod's status,
// never events. They build only with the e2e tag (make e2e), so a plain
// `go test ./...` stays fast and needs no cluster.
package e2e

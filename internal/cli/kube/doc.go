// Package kube is how a verb reaches the cluster: the clients kubectl's
// standard flags (--kubeconfig, --context, -n, ...) give, an error that
// says how to name a cluster when none is found, the namespace's admission
// rules, and a hint of what to grant when the apiserver forbids a call.
// Every verb that talks to Kubernetes goes through it, so each finds its
// cluster and explains a refusal the same way.
package kube

// Package controller is tailor's controller tier of tests: the policy
// reconciler against a real kube-apiserver and etcd (envtest), with a fake
// clock, a scripted metrics source and a simulated kubelet in place of a
// node. Scenarios take seconds, so what the controller does over hours of
// usage is checked on every change; what only a real kubelet can show is
// left to test/e2e.
//
// The tests are behind the controller build tag and need the kube-apiserver
// and etcd binaries hack/cluster.sh builds: run them with make controller.
package controller

// Package oracle checks tailor's resize planner against a real apiserver: it
// generates random (pod, resize) cases, plans each with internal/resize, sends
// the planned patch to the pod's resize subresource as a server-side dry run and
// fails on any case where the predicted accepted/refused differs. It also
// sends every resize autoscale.DecidePolicy chooses on the invariant fuzz's
// cases (autoscaletest.Case) and requires the apiserver to accept it.
//
// It runs only when TAILOR_KUBECONFIG points at a cluster, so `go test ./...`
// stays fast:
//
//	TAILOR_KUBECONFIG=/var/lib/tailor-dev/admin.kubeconfig go test ./test/oracle -v -oracle.cases=10000
package oracle

// Package oracle checks tailor's resize planner against a real apiserver: it
// generates random (pod, resize) cases, plans each with internal/resize, sends
// the planned patch to the pod's resize subresource as a server-side dry run and
// fails on any case where the predicted accepted/refused differs. It does the
// same in namespaces with LimitRanges and ResourceQuotas (Kubernetes' own
// in-place resize e2e cases for them, then generated ones), planning as
// tailor resize --dry-run=client does. It also sends every resize
// fleet.DecidePolicy chooses on the invariant fuzz's cases
// (autoscaletest.Case) and requires the apiserver to accept it.
//
// It runs only against an apiserver, so `go test ./...` stays fast: a
// cluster's, named by TAILOR_KUBECONFIG,
//
//	TAILOR_KUBECONFIG=/var/lib/tailor-dev/admin.kubeconfig go test ./test/oracle -v -oracle.cases=10000
//
// or an envtest kube-apiserver and etcd the package starts itself (no node:
// the node-capacity cases are skipped; no quota controller: the tests write
// quota status as it would), when TEST_ASSET_KUBE_APISERVER and
// TEST_ASSET_ETCD name the binaries:
//
//	make oracle ORACLE_FLAGS='-run TestOracleUnderNamespaceRules -v'
package oracle

// Package crd tests the TailorPolicy CRD's validation against a real
// kube-apiserver: it installs config/crd/bases, submits valid and invalid
// policies as server-side dry runs (nothing is stored) and asserts the exact
// messages a user would read. The CEL rules run only in an apiserver, so no
// unit test can stand in for this one.
//
// It builds only with the e2e tag and needs a cluster:
//
//	TAILOR_KUBECONFIG=/var/lib/tailor-dev/admin.kubeconfig go test -tags e2e ./test/crd
package crd

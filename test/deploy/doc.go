// Package deploy checks tailor's install manifests against a real apiserver:
// the kustomize install (config/default and its components) and the Helm
// chart (deploy/helm/tailor) are rendered, their RBAC is applied into a
// throwaway deploy-* namespace and the rest is server-side dry-run applied,
// then SubjectAccessReviews prove the manager's ServiceAccount can do exactly
// what the controller and its metrics source need, and nothing it must not.
//
// Without build tags only the renders are compared (Helm and kustomize must
// grant the same roles); the apiserver checks need the build tag e2e and a
// cluster:
//
//	TAILOR_KUBECONFIG=/var/lib/tailor-dev/admin.kubeconfig go test -tags e2e ./test/deploy
//
// The Helm cases need a helm binary: TAILOR_HELM, else helm on PATH (make
// verify-deploy installs a pinned one); without it they are skipped.
//
// Every values case of the chart and every overlay of config/ is also
// dry-run applied, without a cluster, by the controller tier
// (test/controller, install_test.go and kustomize_test.go), on an envtest
// apiserver.
package deploy

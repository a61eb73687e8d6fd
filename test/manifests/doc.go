// Package manifests renders tailor's install manifests the way users do
// (helm template of the chart, kubectl kustomize of an overlay) and applies
// them to an apiserver as server-side dry runs with strict field
// validation, each object's warnings kept. The render tests (test/deploy),
// the controller tier's install checks (test/controller) and the release
// checks share it, so every tier reads a render the same way.
package manifests

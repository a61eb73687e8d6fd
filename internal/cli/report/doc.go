// Package report is `tailor report`: what each workload asks for against
// what tailor would give it, priced, as a table, a stable JSON or CSV schema,
// or as patches and diffs of the manifests a GitOps repository holds. It is
// where a team sees the value before installing anything, so it reads the
// cluster and a Prometheus only, and writes nothing.
package report

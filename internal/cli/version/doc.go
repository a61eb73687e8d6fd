// Package version is `tailor version`: this build and, when a kubeconfig
// reaches one, the apiserver's version, the first thing a bug report needs.
// It never fails for want of a cluster.
package version

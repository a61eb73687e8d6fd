// Package metricsserver reads container usage from the metrics.k8s.io API
// (metrics-server), the source most clusters already have. It is the slowest
// to react: metrics-server scrapes the kubelets at its own resolution (10s at
// the least) and reports a rate over its own window.
package metricsserver

// Package podcontainers answers one question for every other package: which
// containers a pod has that run, and hold their requests, alongside the
// workload (regular containers and sidecars, never finished init
// containers). It exists so the answer is written once; it imports only the
// Kubernetes core types and tailor's API, never anything that decides.
package podcontainers

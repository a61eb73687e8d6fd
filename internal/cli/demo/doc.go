// Package demo is `tailor demo`: a sample workload driven through idle, a
// CPU spike and memory growth while a running manager resizes it, shown
// live. It exists to let someone see in minutes what tailor does, on their
// own cluster.
package demo

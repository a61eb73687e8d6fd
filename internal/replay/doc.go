// Package replay reads recorded usage traces and replays them, open loop,
// through provisioning policies to measure how tightly and how safely each
// policy would have provisioned CPU and memory. It exists so that tailor's
// recommender is judged on real usage rather than on anecdotes, and so that
// the CLI (`tailor replay`) and the benchmark module share one accounting.
package replay

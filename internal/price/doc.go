// Package price says what requests cost: a price per CPU core-hour and per
// GiB-hour of memory, for the cluster and for each node that carries its
// own (mixed node types), and Monthly, the one computation of what a
// resource list costs a month. `tailor report` and the dashboard both
// price with it. Pure: nodes are passed in.
package price

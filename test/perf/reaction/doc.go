// Command reaction is tailor's reaction benchmark (make bench-e2e): on the
// local cluster, it steps a container from idle to full CPU, N times per
// metrics source, and measures the seconds from the load starting to the
// container's CFS quota being raised in its cgroup, as the kernel sees it.
// It prints p50/p95 per source and checks them against recorded ranges.
// The same run measures memory ramps, the node agent's cost, a startup
// boost, an HPA beside tailor and a leader's takeover (its managers run as
// processes of the tailor binary, so a crash is a SIGKILL), each against a
// range in the same file.
package main

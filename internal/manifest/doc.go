// Package manifest writes the change to a workload's manifest that makes
// its pod template ask for what tailor recommends, for teams who take the
// change through Git: a strategic-merge patch per workload (a kustomize
// patch), or the same values written into the YAML files that hold the
// workloads, with a unified diff of them. It never decides a value: the
// caller gives each container's new requests and limits (autoscale's
// SizeTemplate plans them), and the command, arguments or variable that
// start a JVM with another heap option (jvm.SetOption), which only the
// patch carries. Pure: bytes in, bytes out; reading and writing
// files is the CLI's.
package manifest

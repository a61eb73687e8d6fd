// Package cgroup reads a container's CPU and memory accounting from the
// node's cgroup filesystem, for the node agent (issue #12): CPU usage and
// CFS throttling, the memory working set against its limit, the kernel's
// count of limit hits and OOM kills, and on cgroup v2 the pressure stall
// figures. It maps a pod's UID and a container's ID to the directory the
// kubelet's cgroupfs driver makes, and refuses any ID that could name a
// directory outside that tree. It reads files and parses them; sampling
// over time and turning counters into rates are its callers'.
package cgroup

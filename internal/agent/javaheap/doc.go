// Package javaheap is the node agent's JVM mode (--jvm, off by default):
// it finds the HotSpot JVMs among each container's processes, adds what
// their counters say (the heap's maximum, committed and used heap, the
// measured non-heap) to the container's report, and with --jvm=softmax
// moves each ZGC or Shenandoah JVM's SoftMaxHeapSize with its container's
// memory limit, so a raised limit is used and a lowered one is collected
// for. Reading another container's processes takes privileges the agent
// otherwise does without (docs/agent.md, "JVM mode").
//
// plan is the pure part (a container's figures and state in, the JVM's
// figures and what to set out); Watcher adds the reads and the attaches.
package javaheap

// Package jvm reads, from a container's spec, whether it runs a Java
// virtual machine and how large its heap may grow.
//
// A JVM fixes its heap's maximum when it starts: from -Xmx (or
// -XX:MaxHeapSize), else as MaxRAMPercentage (25% by default) of the memory
// limit it saw then. An in-place resize does not move it. So memory a JVM's
// limit is raised by gives its heap nothing, and a limit lowered under what
// the heap may still grow to is an OOM kill waiting for the next full heap,
// however small today's working set looks. The decision reads Heap to keep
// a JVM's memory limit above that reach (ReachOf).
//
// The other way round, memory above the reach is memory the heap can never
// use: JudgeFit says when a limit is that far above it, or a full heap
// cannot use what a raise gives, and which heap option a restart should
// carry; SetOption writes that option where the spec holds the old one,
// for `tailor report -o patch`.
package jvm

// Package perfdata reads a HotSpot JVM's performance counters from its
// hsperfdata file (/tmp/hsperfdata_<user>/<pid>, a memory-mapped copy of
// the counters jstat and jcmd PerfCounter.print read) and sums up what
// tailor needs of them: the collector, the heap's maximum, committed and
// used sizes, metaspace and class space, and the live threads.
//
// The file comes from inside a container, written by a process tailor does
// not trust, so Parse checks every offset against the buffer and returns an
// error for anything HotSpot would not write; it never panics (FuzzParse).
// Reading the file needs no signal and no socket: the JVM keeps it current
// on its own.
package perfdata

// Package attach speaks HotSpot's dynamic attach protocol on Linux, as
// jcmd does, to a JVM in any container on the node: it reads and sets the
// JVM's manageable flags, and moves SoftMaxHeapSize where the collector
// honours it (ZGC, Shenandoah), refusing plainly where it does not.
//
// The JVM starts its attach listener when it finds .attach_pid<pid> in its
// /tmp, made by its own user or root, and is sent SIGQUIT; it then listens
// on /tmp/.java_pid<pid>, a socket only its user may open, and takes
// commands from its user or root alone. The pid is the JVM's own, in its
// namespace; the files are reached through /proc/<host pid>/root. Since
// SIGQUIT kills a JVM that does not catch it (-Xrs), the signal is sent
// only to a process whose status says it catches SIGQUIT and whose
// counters say it supports attaching; and the socket is used only when it
// is a socket of the JVM's user, opened inside the container's root (a
// link cannot point it at the node's sockets), and the process listening
// on it is the JVM targeted (its peer credentials).
package attach

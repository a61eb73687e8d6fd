// Package process finds a JVM's files as the node sees them: a process in
// a container has its own pid and /tmp, so its hsperfdata file and its
// attach socket are under /proc/<host pid>/root/tmp, named by the pid it
// has in its own namespace (NSpid). Every path is opened inside that root
// (os.Root), so a symlink the container made cannot lead the reader to
// the node's files or another container's; and a file counts as the JVM's
// only when the JVM's user owns it.
package process

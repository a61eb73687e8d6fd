package cgroup

import (
	"bytes"
	"fmt"
	"path"
	"strconv"
)

// Procs lists the processes in a container's cgroup (cgroup.procs; on v1,
// the memory controller's), by their pids in the reader's pid namespace:
// a reader outside the node's (an agent without hostPID) reads 0 for
// each, and gets none. Only a caller that reads the processes (the JVM
// mode) needs this.
func (t Tree) Procs(c Container) ([]int, error) {
	if err := checkDir(c.Dir); err != nil {
		return nil, err
	}
	controller := ""
	if t.Version == V1 {
		controller = "memory"
	}
	b, err := t.file(path.Join(controller, c.Dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range bytes.Fields(b) {
		pid, err := strconv.Atoi(string(f))
		if err != nil {
			return nil, fmt.Errorf("%s cgroup.procs: %q is not a pid", c.Dir, f)
		}
		if pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// memCgroup is a memory cgroup the manager runs in, with a limit, as a
// container with limits.memory runs: the kernel holds it to the limit
// (reclaiming its page cache, or killing it), and the manager's
// automemlimit reads the limit at start and sets GOMEMLIMIT from it. It
// needs root and a cgroup v1 memory controller or cgroup v2.
type memCgroup struct {
	dir   string
	v2    bool
	limit int64
}

const cgroupRoot = "/sys/fs/cgroup"

func newMemCgroup(name string, limit int64) (*memCgroup, error) {
	cg := &memCgroup{limit: limit}
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		cg.v2, cg.dir = true, filepath.Join(cgroupRoot, name)
	} else {
		cg.dir = filepath.Join(cgroupRoot, "memory", name)
	}
	if err := os.Mkdir(cg.dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("memory cgroup for --memory-limit (root and a memory controller needed): %w", err)
	}
	file, value := "memory.limit_in_bytes", strconv.FormatInt(limit, 10)
	if cg.v2 {
		file = "memory.max"
	}
	if err := os.WriteFile(filepath.Join(cg.dir, file), []byte(value), 0o644); err != nil {
		_ = os.Remove(cg.dir)
		return nil, fmt.Errorf("setting the memory limit: %w", err)
	}
	return cg, nil
}

// procs is the file a process writes its PID to, to join.
func (cg *memCgroup) procs() string { return filepath.Join(cg.dir, "cgroup.procs") }

// stats are the cgroup's peak memory use (page cache included) and the
// OOM kills in it.
func (cg *memCgroup) stats() (peak int64, oomKills int64) {
	peakFile, events, key := "memory.max_usage_in_bytes", "memory.oom_control", "oom_kill"
	if cg.v2 {
		peakFile, events = "memory.peak", "memory.events"
	}
	if b, err := os.ReadFile(filepath.Join(cg.dir, peakFile)); err == nil {
		peak, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	if b, err := os.ReadFile(filepath.Join(cg.dir, events)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == key {
				oomKills, _ = strconv.ParseInt(f[1], 10, 64)
			}
		}
	}
	return peak, oomKills
}

// remove deletes the cgroup once its processes are gone.
func (cg *memCgroup) remove() { _ = os.Remove(cg.dir) }

// uncachedCopy copies the binary at src to dst and drops the copy from the
// page cache, so that its pages are read, and charged to the memory
// cgroup, by the process that runs it, as a container's image is: a binary
// already in the page cache (the benchmark's own build) would have its
// pages charged elsewhere, and the limit would hold the process's own
// memory only.
func uncachedCopy(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		_ = out.Close()
		return err
	}
	// Written and synced pages are clean: DONTNEED drops them.
	if err := unix.Fadvise(int(out.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		_ = out.Close()
		return fmt.Errorf("dropping %s from the page cache: %w", dst, err)
	}
	return out.Close()
}

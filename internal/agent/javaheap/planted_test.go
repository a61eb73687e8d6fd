package javaheap

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/tailorhq/tailor/internal/agent/cgroup"
	"github.com/tailorhq/tailor/internal/agent/report"
)

// perfdataOf lays out a version 2.0 perfdata file of 64-bit counters.
func perfdataOf(longs map[string]int64) []byte {
	b := make([]byte, 32)
	binary.BigEndian.PutUint32(b[0:], 0xcafec0c0)
	b[4], b[5], b[6], b[7] = 1, 2, 0, 1
	binary.LittleEndian.PutUint32(b[24:], 32)
	binary.LittleEndian.PutUint32(b[28:], uint32(len(longs)))
	for name, v := range longs {
		nameLen := (len(name) + 1 + 7) / 8 * 8
		e := make([]byte, 20+nameLen+8)
		binary.LittleEndian.PutUint32(e[0:], uint32(len(e)))
		binary.LittleEndian.PutUint32(e[4:], 20)
		e[12], e[14] = 'J', 1
		binary.LittleEndian.PutUint32(e[16:], uint32(20+nameLen))
		copy(e[20:], name)
		binary.LittleEndian.PutUint64(e[20+nameLen:], uint64(v))
		b = append(b, e...)
	}
	return b
}

// A container's process whose perfdata says what no JVM says (planted:
// the container writes the file) is left out of the report, which stays
// valid: a tenant cannot get its node's reports refused.
func TestPlantedPerfData(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("plants a file in /tmp/hsperfdata_root, as root")
	}
	pid := os.Getpid()
	dir := "/tmp/hsperfdata_root"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, strconv.Itoa(pid))
	if _, err := os.Stat(file); err == nil {
		t.Fatalf("%s exists", file)
	}
	t.Cleanup(func() { _ = os.Remove(file) })
	root := t.TempDir()
	cdir := filepath.Join("kubepods/burstable/pod"+podUID, zgcID)
	if err := os.MkdirAll(filepath.Join(root, "memory", cdir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "memory", cdir, "cgroup.procs"), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := &Watcher{Mode: SoftMax, Tree: cgroup.Tree{Root: root, Version: cgroup.V1}, Proc: "/proc", AttachTimeout: time.Second, Log: testr.New(t)}
	containers := map[string]cgroup.Container{zgcID: {PodUID: podUID, ID: zgcID, Dir: cdir}}
	for name, longs := range map[string]map[string]int64{
		"a heap past any JVM's": {"sun.gc.generation.1.maxCapacity": 1 << 62, "sun.gc.generation.1.capacity": 1 << 20},
		"committed past max":    {"sun.gc.generation.1.maxCapacity": 1 << 20, "sun.gc.generation.1.capacity": 1 << 40},
		"huge metaspace":        {"sun.gc.generation.1.maxCapacity": 1 << 30, "sun.gc.metaspace.capacity": 1 << 60},
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(file, perfdataOf(longs), 0o600); err != nil {
				t.Fatal(err)
			}
			r := report.Report{Containers: []report.Container{{PodUID: podUID, ID: zgcID, Time: time.Now(), MemoryLimit: 1 << 30, WorkingSet: 100 << 20}}}
			w.Observe(context.Background(), time.Now(), &r, containers)
			if r.Containers[0].JVM != nil {
				t.Errorf("reported %+v", r.Containers[0].JVM)
			}
			if err := r.Validate(); err != nil {
				t.Errorf("the report: %v", err)
			}
		})
	}
	// The same file with a JVM's figures is read: the plant was read, and
	// refused for its figures alone.
	if err := os.WriteFile(file, perfdataOf(map[string]int64{"sun.gc.generation.1.maxCapacity": 1 << 30, "sun.gc.generation.1.capacity": 1 << 28}), 0o600); err != nil {
		t.Fatal(err)
	}
	r := report.Report{Containers: []report.Container{{PodUID: podUID, ID: zgcID, Time: time.Now(), MemoryLimit: 1 << 30}}}
	w.Observe(context.Background(), time.Now(), &r, containers)
	if j := r.Containers[0].JVM; j == nil || j.HeapMax != 1<<30 || j.SoftMaxNote == "" {
		t.Errorf("a sane file: %+v", j)
	}
}

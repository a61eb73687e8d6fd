package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Sample is one reading of a container's cgroup. Counters are cumulative
// since the cgroup was made; a caller turns two samples into rates.
type Sample struct {
	// CPUUsage is the CPU time the container has used.
	CPUUsage time.Duration
	// Periods and Throttled count CFS enforcement periods, and those in
	// which the container ran out of quota; ThrottledTime is how long it
	// waited for quota. All zero without a CPU limit.
	Periods, Throttled uint64
	ThrottledTime      time.Duration
	// MemoryUsage is what the cgroup is charged, page cache included;
	// WorkingSet is that less its inactive file pages, what the kubelet
	// evicts by and what the kernel cannot reclaim before an OOM kill.
	MemoryUsage, WorkingSet uint64
	// MemoryLimit is the cgroup's limit; 0 is none.
	MemoryLimit uint64
	// LimitHits counts the times usage reached the limit (v1
	// memory.failcnt, v2 memory.events "max"); OOMKills the kernel's OOM
	// kills in the cgroup (v1 memory.oom_control "oom_kill", on kernels
	// that report it; v2 memory.events "oom_kill").
	LimitHits, OOMKills uint64
	// CPUPressure and MemoryPressure are the pressure stall figures of
	// cgroup v2 (nil on v1, or on a kernel without PSI).
	CPUPressure, MemoryPressure *Pressure
}

// Pressure is a cgroup's pressure stall information for one resource: the
// share of wall time (0 to 1) in which some (or all, "full") of its tasks
// stalled waiting for it, averaged over the last 10 seconds, and the total
// stall time so far.
type Pressure struct {
	SomeAvg10, FullAvg10 float64
	SomeTotal, FullTotal time.Duration
}

// noLimit is the smallest figure cgroup v1 writes for "no limit" (the
// largest page-aligned int64; the kernels differ in which).
const noLimit = 1 << 62

// Read reads the cgroup of one container. Every file is opened inside
// t.Root (os.OpenInRoot): a symlink in the tree cannot lead the read out.
func (t Tree) Read(qos corev1.PodQOSClass, podUID, containerID string) (Sample, error) {
	d, err := t.Dir("", qos, podUID, containerID)
	if err != nil {
		return Sample{}, err
	}
	rel, err := filepath.Rel(t.Root, d)
	if err != nil {
		return Sample{}, err
	}
	return t.ReadContainer(Container{PodUID: podUID, ID: containerID, Dir: rel})
}

// readFile reads one file of a container's cgroup: name under controller
// (v1; ignored on v2, where every controller shares one directory).
type readFile func(controller, name string) ([]byte, error)

// parse reads a container's files through read and fills s.
func (t Tree) parse(read readFile, s *Sample) error {
	if t.Version == V2 {
		return parseV2(read, s)
	}
	return parseV1(read, s)
}

func parseV1(read readFile, s *Sample) error {
	usage, err := number(read, "cpuacct", "cpuacct.usage")
	if err != nil {
		return err
	}
	s.CPUUsage = time.Duration(usage)
	var periods, throttled, throttledTime uint64
	if err := keyed(read, "cpu", "cpu.stat", map[string]*uint64{"nr_periods": &periods, "nr_throttled": &throttled, "throttled_time": &throttledTime}); err != nil {
		return err
	}
	s.Periods, s.Throttled, s.ThrottledTime = periods, throttled, time.Duration(throttledTime)
	if s.MemoryUsage, err = number(read, "memory", "memory.usage_in_bytes"); err != nil {
		return err
	}
	limit, err := number(read, "memory", "memory.limit_in_bytes")
	if err != nil {
		return err
	}
	if limit < noLimit {
		s.MemoryLimit = limit
	}
	var inactive uint64
	if err := keyed(read, "memory", "memory.stat", map[string]*uint64{"total_inactive_file": &inactive}); err != nil {
		return err
	}
	s.WorkingSet = workingSet(s.MemoryUsage, inactive)
	if s.LimitHits, err = number(read, "memory", "memory.failcnt"); err != nil {
		return err
	}
	return keyed(read, "memory", "memory.oom_control", map[string]*uint64{"oom_kill": &s.OOMKills})
}

func parseV2(read readFile, s *Sample) error {
	var usec, throttledUsec uint64
	if err := keyed(read, "", "cpu.stat", map[string]*uint64{"usage_usec": &usec, "nr_periods": &s.Periods, "nr_throttled": &s.Throttled, "throttled_usec": &throttledUsec}); err != nil {
		return err
	}
	s.CPUUsage, s.ThrottledTime = time.Duration(usec)*time.Microsecond, time.Duration(throttledUsec)*time.Microsecond
	var err error
	if s.MemoryUsage, err = number(read, "", "memory.current"); err != nil {
		return err
	}
	lim, err := read("", "memory.max")
	if err != nil {
		return err
	}
	if v := strings.TrimSpace(string(lim)); v != "max" {
		if s.MemoryLimit, err = strconv.ParseUint(v, 10, 64); err != nil {
			return fmt.Errorf("memory.max %q: %w", v, err)
		}
	}
	var inactive uint64
	if err := keyed(read, "", "memory.stat", map[string]*uint64{"inactive_file": &inactive}); err != nil {
		return err
	}
	s.WorkingSet = workingSet(s.MemoryUsage, inactive)
	if err := keyed(read, "", "memory.events", map[string]*uint64{"max": &s.LimitHits, "oom_kill": &s.OOMKills}); err != nil {
		return err
	}
	// PSI is optional: a kernel booted without it has no such files.
	for name, into := range map[string]**Pressure{"cpu.pressure": &s.CPUPressure, "memory.pressure": &s.MemoryPressure} {
		raw, err := read("", name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		p, err := ParsePressure(raw)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		*into = &p
	}
	return nil
}

// workingSet is usage less the inactive file pages, as cAdvisor counts it.
func workingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile > usage {
		return 0
	}
	return usage - inactiveFile
}

// maxFile bounds what is read of one file: cgroup files are a few hundred
// bytes (memory.stat 1-2 KiB); anything longer is not one.
const maxFile = 16 << 10

func (t Tree) file(rel string) ([]byte, error) {
	f, err := os.OpenInRoot(t.Root, rel)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	if len(b) > maxFile {
		return nil, fmt.Errorf("%s is larger than %d bytes: not a cgroup file", rel, maxFile)
	}
	return b, nil
}

func number(read readFile, controller, name string) (uint64, error) {
	b, err := read(controller, name)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

// keyed parses a file of "name value" lines (cpu.stat, memory.stat,
// memory.events, memory.oom_control) into the wanted names; the others
// are checked for shape and skipped. A wanted name the file lacks stays 0
// (older kernels write fewer lines).
func keyed(read readFile, controller, name string, want map[string]*uint64) error {
	b, err := read(controller, name)
	if err != nil {
		return err
	}
	for line := range bytes.Lines(b) {
		line = bytes.TrimRight(line, "\n")
		k, v, ok := bytes.Cut(line, []byte(" "))
		if !ok || len(k) == 0 || len(v) == 0 {
			return fmt.Errorf("%s: line %q is not \"name value\"", name, line)
		}
		into, wanted := want[string(k)]
		if !wanted {
			continue
		}
		x, err := strconv.ParseUint(string(v), 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", name, k, err)
		}
		*into = x
	}
	return nil
}

// ParsePressure parses a PSI file (cpu.pressure, memory.pressure):
//
//	some avg10=0.00 avg60=0.00 avg300=0.00 total=0
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=0
//
// The averages are percentages of wall time; the totals microseconds.
// cpu.pressure has no "full" line on kernels before 5.13.
func ParsePressure(raw []byte) (Pressure, error) {
	var p Pressure
	sc := bufio.NewScanner(bytes.NewReader(raw))
	seen := false
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		var avg10 *float64
		var total *time.Duration
		switch f[0] {
		case "some":
			avg10, total = &p.SomeAvg10, &p.SomeTotal
			seen = true
		case "full":
			avg10, total = &p.FullAvg10, &p.FullTotal
		default:
			return p, fmt.Errorf("line %q: want some or full", sc.Text())
		}
		for _, kv := range f[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return p, fmt.Errorf("field %q: want name=value", kv)
			}
			switch k {
			case "avg10":
				x, err := strconv.ParseFloat(v, 64)
				if err != nil || x < 0 || x > 100 {
					return p, fmt.Errorf("avg10 %q: want a percentage", v)
				}
				*avg10 = x / 100
			case "total":
				x, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return p, fmt.Errorf("total %q: %w", v, err)
				}
				*total = time.Duration(x) * time.Microsecond
			}
		}
	}
	if err := sc.Err(); err != nil {
		return p, err
	}
	if !seen {
		return p, errors.New("no \"some\" line")
	}
	return p, nil
}

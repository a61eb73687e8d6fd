package perfdata

import (
	"fmt"
	"strings"
)

// Collector is a HotSpot garbage collector.
type Collector string

const (
	G1         Collector = "G1"
	Parallel   Collector = "Parallel"
	Serial     Collector = "Serial"
	ZGC        Collector = "ZGC"
	Shenandoah Collector = "Shenandoah"
	// Unknown: the counters name no collector tailor knows (another JVM's,
	// or a future HotSpot's).
	Unknown Collector = ""
)

// SoftMaxMoves says whether the collector honours SoftMaxHeapSize set at
// run time: ZGC and Shenandoah aim their cycles at it. G1, Parallel and
// Serial take the flag (it is manageable on every collector) and ignore
// it: setting it there changes nothing but what the flag reads.
func (c Collector) SoftMaxMoves() bool { return c == ZGC || c == Shenandoah }

// JVM is what tailor reads of a JVM's counters. Sizes are in bytes.
type JVM struct {
	Collector Collector
	// HeapMax is the heap's maximum (MaxHeapSize): the sum of the
	// generations' maxima, or for G1, whose generations each may take the
	// whole heap, the largest of them.
	HeapMax int64
	// HeapCommitted is the heap the JVM has committed (its generations'
	// capacities; for G1, young and old together); HeapUsed what objects
	// occupy of it.
	HeapCommitted, HeapUsed int64
	// MetaspaceCommitted and MetaspaceUsed cover all of metaspace, the
	// compressed class space included (JDK 16 and later count it in).
	MetaspaceCommitted, MetaspaceUsed int64
	// ClassSpaceCommitted is the compressed class space's part of it.
	ClassSpaceCommitted int64
	// CodeSize is the compiled code the JIT holds (sun.ci.nmethodCodeSize):
	// what of the code cache is in use, not its reservation.
	CodeSize int64
	// Threads is the live Java threads, each with a stack of its own.
	Threads int64
	// VMArgs is the JVM's options as it was started (java.rt.vmArgs).
	VMArgs string
	// Attachable says the JVM takes attach commands (not started with
	// -XX:+DisableAttachMechanism): the first of sun.rt.jvmCapabilities.
	Attachable bool
}

// NonHeap is the JVM's memory outside the heap that its counters show:
// metaspace and compiled code. It leaves out what no counter holds (thread
// stacks, the collector's own structures, direct buffers, malloc), so it is
// a floor: a caller that can measure the process does better with that.
func (j JVM) NonHeap() int64 { return j.MetaspaceCommitted + j.CodeSize }

// Summarize reads c's counters into a JVM. A counter set without heap
// generations is not a HotSpot JVM's, or is one started with
// -XX:-UsePerfData's remnants: an error.
func Summarize(c Counters) (JVM, error) {
	j := JVM{
		Collector:           collectorOf(c),
		MetaspaceCommitted:  c.Longs["sun.gc.metaspace.capacity"],
		MetaspaceUsed:       c.Longs["sun.gc.metaspace.used"],
		ClassSpaceCommitted: c.Longs["sun.gc.compressedclassspace.capacity"],
		CodeSize:            c.Longs["sun.ci.nmethodCodeSize"],
		Threads:             c.Longs["java.threads.live"],
		VMArgs:              c.Strings["java.rt.vmArgs"],
		Attachable:          strings.HasPrefix(c.Strings["sun.rt.jvmCapabilities"], "1"),
	}
	generations := 0
	for g := 0; ; g++ {
		p := fmt.Sprintf("sun.gc.generation.%d.", g)
		maxCap, ok := c.Longs[p+"maxCapacity"]
		if !ok {
			// ZGC numbers its one generation 1, with no 0.
			if g == 0 {
				continue
			}
			break
		}
		generations++
		if maxCap < 0 || c.Longs[p+"capacity"] < 0 {
			return JVM{}, fmt.Errorf("perfdata: generation %d: negative capacity", g)
		}
		if j.Collector == G1 {
			j.HeapMax = max(j.HeapMax, maxCap)
		} else {
			j.HeapMax += maxCap
		}
		j.HeapCommitted += c.Longs[p+"capacity"]
		for s := 0; ; s++ {
			used, ok := c.Longs[fmt.Sprintf("%sspace.%d.used", p, s)]
			if !ok {
				break
			}
			j.HeapUsed += used
		}
	}
	if generations == 0 {
		return JVM{}, fmt.Errorf("perfdata: no heap generation counters (sun.gc.generation.*): not a HotSpot JVM's")
	}
	return j, nil
}

// collectorOf names the collector: from the policy's name where the
// collector has one (G1, Parallel, Serial), else from its collectors'
// names (ZGC and Shenandoah have no policy counters).
func collectorOf(c Counters) Collector {
	switch c.Strings["sun.gc.policy.name"] {
	case "GarbageFirst":
		return G1
	case "ParScav:MSC":
		return Parallel
	case "Copy:MSC":
		return Serial
	}
	for g := 0; g < 4; g++ {
		name := c.Strings[fmt.Sprintf("sun.gc.collector.%d.name", g)]
		switch {
		case strings.HasPrefix(name, "Z "):
			return ZGC
		case strings.HasPrefix(name, "Shenandoah"):
			return Shenandoah
		}
	}
	return Unknown
}

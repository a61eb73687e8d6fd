package javaheap

import (
	"fmt"
	"time"

	"github.com/tailorhq/tailor/internal/agent/report"
	"github.com/tailorhq/tailor/internal/jvm/perfdata"
	"github.com/tailorhq/tailor/internal/jvm/softmax"
)

// Mode is what the agent does with the JVMs it finds.
type Mode string

const (
	// Off: the agent reads no process (the default, needing nothing
	// beyond the cgroup tree).
	Off Mode = "off"
	// Read: it reads the JVMs' counters and reports them.
	Read Mode = "read"
	// SoftMax: it also moves their SoftMaxHeapSize with the limit.
	SoftMax Mode = "softmax"
)

// ParseMode reads --jvm.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Off, Read, SoftMax:
		return m, nil
	}
	return "", fmt.Errorf("--jvm %q: want off, read or softmax", s)
}

// retryAfter is how long an attach that failed waits before it is tried
// again: a JVM that refused once (its socket, its signal) refuses the
// next push's too, and each try may wait seconds for its listener.
const retryAfter = time.Minute

// state is what the Watcher keeps of one container's JVM.
type state struct {
	// pid is the JVM's pid on the node: another (a restart inside the
	// container) starts the state over.
	pid int
	// softMax is the bound last set (0: none), and limit the container's
	// limit it was set or kept for (0: it fits none). After an attach
	// failed, limit stays the earlier one the JVM's bound still fits.
	softMax int64
	limit   uint64
	// note says why the bound is not moved; failedAt when an attach last
	// failed.
	note     string
	failedAt time.Time
}

// figures is what a container's report says of its JVM: j's counters and
// the non-heap measured against the container's working set.
func figures(j perfdata.JVM, processes int, workingSet uint64) *report.JVM {
	return &report.JVM{
		Collector:     string(j.Collector),
		HeapMax:       uint64(max(j.HeapMax, 0)),
		HeapCommitted: uint64(max(j.HeapCommitted, 0)),
		HeapUsed:      uint64(max(j.HeapUsed, 0)),
		NonHeap:       uint64(nonHeap(j, workingSet)),
		Metaspace:     uint64(max(j.MetaspaceCommitted, 0)),
		Threads:       uint64(max(j.Threads, 0)),
		Processes:     processes,
	}
}

// nonHeap is the container's memory outside the JVM's heap: its working
// set less the committed heap, or the JVM's own non-heap counters where
// those say more. A committed heap is not all resident (ZGC commits ahead
// of use, and a page untouched is not charged), so the difference can
// come out under what metaspace alone holds; the counters are a floor.
func nonHeap(j perfdata.JVM, workingSet uint64) int64 {
	measured := int64(workingSet) - j.HeapCommitted
	return max(measured, j.NonHeap(), 0)
}

// step is what plan says to do for one container's JVM.
type step struct {
	// set: move the bound to softMax.
	set     bool
	softMax int64
	// fits says the bound, moved or kept, fits the container's limit
	// (softmax's target is not 0). Where it does not, the report's
	// softMaxLimit is 0: a bound held at its least reads like any other.
	fits bool
	// note replaces the state's note ("" clears it).
	note   string
	reason string
}

// plan decides, in mode, whether to move the bound of JVM j in a
// container whose report is rc, for its memory limit, with st the
// Watcher's state of it.
func plan(mode Mode, now time.Time, j perfdata.JVM, processes int, rc *report.Container, st *state) step {
	switch {
	case mode != SoftMax:
		return step{note: "the agent runs with --jvm=" + string(mode) + ": it does not move SoftMaxHeapSize"}
	case processes > 1:
		return step{note: fmt.Sprintf("%d JVMs in the container: how its limit splits between them is not known, so no bound is moved", processes)}
	case !j.Collector.SoftMaxMoves():
		name := string(j.Collector)
		if name == "" {
			name = "an unknown collector"
		}
		return step{note: fmt.Sprintf("the JVM runs %s, which does not honour SoftMaxHeapSize (ZGC and Shenandoah do): its heap is held by its maximum alone", name)}
	case !j.Attachable:
		return step{note: "the JVM takes no attach commands (-XX:+DisableAttachMechanism)"}
	case !st.failedAt.IsZero() && now.Sub(st.failedAt) < retryAfter:
		return step{note: st.note}
	}
	d := softmax.Decide(softmax.Input{
		Limit:   int64(rc.MemoryLimit),
		HeapMax: j.HeapMax,
		NonHeap: nonHeap(j, rc.WorkingSet),
		Current: st.softMax,
	})
	return step{set: d.Set, softMax: d.SoftMax, fits: d.Target > 0, reason: d.Reason}
}

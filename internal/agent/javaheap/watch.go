package javaheap

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/go-logr/logr"

	"github.com/tailorhq/tailor/internal/agent/cgroup"
	"github.com/tailorhq/tailor/internal/agent/report"
	"github.com/tailorhq/tailor/internal/jvm/attach"
	"github.com/tailorhq/tailor/internal/jvm/perfdata"
	"github.com/tailorhq/tailor/internal/jvm/process"
)

// Watcher finds and reads the JVMs of the containers the agent reports,
// and moves their bounds. Not safe for concurrent use.
type Watcher struct {
	Mode Mode
	Tree cgroup.Tree
	// Proc is the node's proc filesystem: the agent's own /proc, with
	// hostPID.
	Proc string
	// AttachTimeout bounds one attach: starting the JVM's listener and
	// one command.
	AttachTimeout time.Duration
	Log           logr.Logger

	states map[string]*state // by container ID
}

// found is one JVM process of a container.
type found struct {
	p   process.Process
	jvm perfdata.JVM
}

// Observe adds to each container of r the figures of its JVM, found
// among the processes of its cgroup (containers by ID), and, in SoftMax
// mode, moves the JVM's bound for the container's limit. A container
// without a JVM is left as it is; one whose processes cannot be read is
// logged and left too.
func (w *Watcher) Observe(ctx context.Context, now time.Time, r *report.Report, containers map[string]cgroup.Container) {
	if w.Mode == Off || w.Mode == "" {
		return
	}
	if w.states == nil {
		w.states = map[string]*state{}
	}
	seen := make(map[string]bool, len(r.Containers))
	for i := range r.Containers {
		rc := &r.Containers[i]
		c, ok := containers[rc.ID]
		if !ok {
			continue
		}
		jvms, err := w.find(c)
		if err != nil {
			w.Log.V(1).Info("cannot read the container's processes", "pod", rc.PodUID, "container", rc.ID, "error", err.Error())
			continue
		}
		if len(jvms) == 0 {
			continue
		}
		seen[rc.ID] = true
		main := jvms[0]
		for _, f := range jvms[1:] {
			if f.jvm.HeapMax > main.jvm.HeapMax {
				main = f
			}
		}
		st := w.states[rc.ID]
		if st == nil || st.pid != main.p.PID {
			st = &state{pid: main.p.PID}
			w.states[rc.ID] = st
		}
		rc.JVM = figures(main.jvm, len(jvms), rc.WorkingSet)
		if err := rc.JVM.Validate(); err != nil {
			// The figures come from a file the container writes: ones no
			// JVM has are left out, not sent to have the node's report
			// refused, and no bound is moved on them.
			w.Log.V(1).Info("a JVM's counters make no sense; not reported", "pod", rc.PodUID, "container", rc.ID, "error", err.Error())
			rc.JVM = nil
			continue
		}
		w.act(ctx, now, main, len(jvms), rc, st)
		rc.JVM.SoftMax, rc.JVM.SoftMaxLimit, rc.JVM.SoftMaxNote = uint64(st.softMax), st.limit, st.note
		if st.softMax == 0 {
			rc.JVM.SoftMaxLimit = 0
		}
	}
	for id := range w.states {
		if !seen[id] {
			delete(w.states, id)
		}
	}
}

// act carries out plan's step for one JVM.
func (w *Watcher) act(ctx context.Context, now time.Time, f found, processes int, rc *report.Container, st *state) {
	s := plan(w.Mode, now, f.jvm, processes, rc, st)
	fitted := uint64(0)
	if s.fits {
		fitted = rc.MemoryLimit
	}
	if !s.set {
		st.note = s.note
		if st.softMax > 0 && s.note == "" {
			st.limit = fitted
		}
		return
	}
	actx, cancel := context.WithTimeout(ctx, w.AttachTimeout)
	defer cancel()
	got, err := attach.SetSoftMax(actx, f.p, f.jvm, s.softMax)
	log := w.Log.WithValues("pod", rc.PodUID, "container", rc.ID, "pid", f.p.PID, "memoryLimit", rc.MemoryLimit)
	if err != nil {
		st.failedAt, st.note = now, "setting SoftMaxHeapSize failed: "+err.Error()
		var unsupported *attach.UnsupportedError
		if errors.As(err, &unsupported) {
			st.failedAt = time.Time{}
		}
		log.Error(err, "moving the JVM's soft heap bound", "softMax", s.softMax)
		return
	}
	log.Info("moved the JVM's soft heap bound", "from", st.softMax, "to", got, "why", s.reason)
	st.softMax, st.limit, st.note, st.failedAt = got, fitted, "", time.Time{}
}

// maxProcesses is how many of a container's processes are looked at for a
// JVM at each push.
const maxProcesses = 16

// find lists the container's JVMs: its processes with a perfdata file
// that parses. A process that is not a JVM, or has gone, is skipped.
func (w *Watcher) find(c cgroup.Container) ([]found, error) {
	pids, err := w.Tree.Procs(c)
	if err != nil {
		return nil, err
	}
	if len(pids) > maxProcesses {
		// A container's processes are its own to multiply, and each may
		// hold a perfdata file of up to perfdata.MaxSize: the first few
		// (lowest pids; a container's JVM is usually its first process)
		// are read, not all.
		slices.Sort(pids)
		pids = pids[:maxProcesses]
	}
	var out []found
	for _, pid := range pids {
		p, err := process.Of(w.Proc, pid)
		if err != nil {
			continue
		}
		b, err := p.ReadPerfData(perfdata.MaxSize)
		if err != nil {
			if !errors.Is(err, process.ErrNoPerfData) {
				w.Log.V(1).Info("cannot read a process's perfdata", "container", c.ID, "pid", pid, "error", err.Error())
			}
			continue
		}
		cs, err := perfdata.Parse(b)
		if err != nil {
			continue
		}
		j, err := perfdata.Summarize(cs)
		if err != nil {
			continue
		}
		out = append(out, found{p: p, jvm: j})
	}
	return out, nil
}

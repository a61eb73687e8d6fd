package attach_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tailorhq/tailor/internal/jvm/attach"
	"github.com/tailorhq/tailor/internal/jvm/jvmtest"
	"github.com/tailorhq/tailor/internal/jvm/perfdata"
	"github.com/tailorhq/tailor/internal/jvm/process"
)

func counters(t *testing.T, p process.Process) perfdata.JVM {
	t.Helper()
	b, err := p.ReadPerfData(perfdata.MaxSize)
	if err != nil {
		t.Fatal(err)
	}
	c, err := perfdata.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	j, err := perfdata.Summarize(c)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return c
}

// On ZGC the soft bound moves both ways and reads back as set, in a JVM
// that is pid 1 of its own pid namespace with a /tmp of its own, as in a
// container: everything goes through /proc/<pid>/root.
func TestZGCMoves(t *testing.T) {
	for name, namespaced := range map[string]bool{"here": false, "in namespaces": true} {
		t.Run(name, func(t *testing.T) {
			j := jvmtest.Start(t, jvmtest.Options{Flags: []string{"-XX:+UseZGC", "-Xmx512m"}, LiveMiB: 16, RateMiB: 20, Namespaced: namespaced})
			p := j.Process
			if namespaced && p.NSPID != 1 {
				t.Fatalf("the JVM's own pid is %d, want 1", p.NSPID)
			}
			jvm := counters(t, p)
			if jvm.Collector != perfdata.ZGC || !jvm.Attachable {
				t.Fatalf("collector %q, attachable %v", jvm.Collector, jvm.Attachable)
			}
			before, err := attach.SoftMax(ctx(t), p)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("SoftMaxHeapSize at start: %d", before)
			if before != 512<<20 {
				t.Errorf("SoftMaxHeapSize at start %d, want MaxHeapSize's %d", before, 512<<20)
			}
			for _, n := range []int64{128 << 20, 384 << 20, 64 << 20} {
				got, err := attach.SetSoftMax(ctx(t), p, jvm, n)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("SoftMaxHeapSize set to %d, reads %d", n, got)
				if got != n {
					t.Errorf("set %d, reads %d", n, got)
				}
			}
			if _, err := attach.SetSoftMax(ctx(t), p, jvm, 1<<30); err == nil {
				t.Errorf("a soft max above the heap's maximum was set")
			}
			if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(p.PID), "root/tmp/.attach_pid"+strconv.Itoa(p.NSPID))); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the trigger file was left behind: %v", err)
			}
		})
	}
}

// ZGC collects to keep its heap near the soft bound and gives back what
// it no longer needs: lowered, the committed heap follows it down.
func TestZGCHeapFollows(t *testing.T) {
	j := jvmtest.Start(t, jvmtest.Options{
		Flags:   []string{"-XX:+UseZGC", "-Xmx512m", "-Xms16m", "-XX:ZUncommitDelay=1"},
		LiveMiB: 32, RateMiB: 150,
	})
	p := j.Process
	committed := func(d time.Duration) int64 {
		// The largest committed heap over d.
		var top int64
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
			top = max(top, counters(t, p).HeapCommitted)
		}
		return top
	}
	high := committed(6 * time.Second)
	const low = 96 << 20
	if _, err := attach.SetSoftMax(ctx(t), p, counters(t, p), low); err != nil {
		t.Fatal(err)
	}
	// The uncommit delay and a cycle or two, longer on a busy machine:
	// the largest committed heap over two seconds, until it is down.
	var after int64
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if after = committed(2 * time.Second); after < high && after <= 2*low {
			break
		}
	}
	t.Logf("committed heap: up to %dMiB under SoftMaxHeapSize=512MiB, up to %dMiB once lowered to %dMiB", high>>20, after>>20, low>>20)
	if after >= high || after > 2*low {
		t.Errorf("the committed heap did not follow the soft bound down: %dMiB before, %dMiB after", high>>20, after>>20)
	}
}

// G1 takes the flag but ignores it: refused, plainly, and without
// attaching at all.
func TestG1Refused(t *testing.T) {
	j := jvmtest.Start(t, jvmtest.Options{Flags: []string{"-XX:+UseG1GC", "-Xmx256m"}, LiveMiB: 8, RateMiB: 10})
	p := j.Process
	jvm := counters(t, p)
	_, err := attach.SetSoftMax(ctx(t), p, jvm, 128<<20)
	var unsupported *attach.UnsupportedError
	if !errors.As(err, &unsupported) || unsupported.Collector != perfdata.G1 {
		t.Fatalf("error %v, want an UnsupportedError for G1", err)
	}
	t.Log(err)
	if _, err := os.Stat("/tmp/.java_pid" + strconv.Itoa(p.NSPID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refusal attached to the JVM: %v", err)
	}
	// The attach itself works on G1: the flag reads its default.
	v, err := attach.SoftMax(ctx(t), p)
	if err != nil || v != 256<<20 {
		t.Errorf("G1's SoftMaxHeapSize: %d, %v", v, err)
	}
}

// A process that does not catch SIGQUIT would die of it: no signal is
// sent. (A JVM with -Xrs, which does not, starts its attach listener at
// start-up instead, and is attached to without one.)
func TestNoSignalToWhatDies(t *testing.T) {
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleep.Process.Kill(); _ = sleep.Wait() })
	p, err := process.Of("/proc", sleep.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := attach.SoftMax(ctx(t), p); !errors.Is(err, attach.ErrSignalNotCaught) {
		t.Fatalf("error %v, want ErrSignalNotCaught", err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := sleep.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("sleep is gone: %v", err)
	}

	j := jvmtest.Start(t, jvmtest.Options{Flags: []string{"-XX:+UseZGC", "-Xmx128m", "-Xrs"}, LiveMiB: 8, RateMiB: 10})
	if v, err := attach.SoftMax(ctx(t), j.Process); err != nil || v != 128<<20 {
		t.Errorf("-Xrs: SoftMaxHeapSize %d, %v", v, err)
	}
}

// A JVM that takes no attach commands says so in its counters.
func TestAttachDisabled(t *testing.T) {
	j := jvmtest.Start(t, jvmtest.Options{Flags: []string{"-XX:+UseZGC", "-Xmx128m", "-XX:+DisableAttachMechanism"}, LiveMiB: 8, RateMiB: 10})
	jvm := counters(t, j.Process)
	if jvm.Attachable {
		t.Errorf("attachable")
	}
	if _, err := attach.SetSoftMax(ctx(t), j.Process, jvm, 64<<20); !errors.Is(err, attach.ErrAttachDisabled) {
		t.Errorf("error %v, want ErrAttachDisabled", err)
	}
}

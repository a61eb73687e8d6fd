package jvmtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tailorhq/tailor/internal/jvm/perfdata"
	"github.com/tailorhq/tailor/internal/jvm/process"
)

// churn keeps live MiB reachable and allocates garbage MiB a second, in
// 64KiB arrays; "main" prints nothing, so a test reads it only through its
// counters and flags.
const churn = `public final class Churn {
  public static void main(String[] a) throws Exception {
    int live = Integer.parseInt(a[0]), rate = Integer.parseInt(a[1]);
    byte[][] keep = new byte[live * 16][];
    for (int i = 0; i < keep.length; i++) keep[i] = new byte[64 << 10];
    byte[][] ring = new byte[64][];
    long n = 0;
    while (true) {
      for (int i = 0; i < rate * 16 / 100; i++) ring[(int) (n++ % ring.length)] = new byte[64 << 10];
      Thread.sleep(10);
    }
  }
}
`

var (
	compileOnce sync.Once
	classDir    string
	compileErr  error
)

// Java is the java launcher, or "" with t skipped when none is installed.
func Java(t testing.TB) string {
	t.Helper()
	java, err := exec.LookPath("java")
	if err != nil {
		t.Skip("java is not installed (hack/apps.sh installs openjdk-17-jdk-headless): the JVM tests need a real JVM")
	}
	return java
}

// compile builds Churn once per test binary, into the user's cache rather
// than /tmp: a JVM in a mount namespace of its own gets a /tmp of its own
// (Namespaced), and must still find its class.
func compile(t testing.TB) string {
	t.Helper()
	compileOnce.Do(func() {
		javac, err := exec.LookPath("javac")
		if err != nil {
			compileErr = errors.New("javac is not installed (hack/apps.sh installs openjdk-17-jdk-headless)")
			return
		}
		cache, err := os.UserCacheDir()
		if err != nil {
			compileErr = err
			return
		}
		classDir = filepath.Join(cache, "tailor", "jvmtest")
		if compileErr = os.MkdirAll(classDir, 0o755); compileErr != nil {
			return
		}
		src := filepath.Join(classDir, "Churn.java")
		if compileErr = os.WriteFile(src, []byte(churn), 0o644); compileErr != nil {
			return
		}
		out, err := exec.Command(javac, "-d", classDir, src).CombinedOutput()
		if err != nil {
			compileErr = errors.New("javac: " + err.Error() + ": " + string(out))
		}
	})
	if compileErr != nil {
		t.Fatal(compileErr)
	}
	return classDir
}

// JVM is a running JVM started by Start.
type JVM struct {
	Cmd *exec.Cmd
	// Process is the JVM as the node sees it.
	Process process.Process
}

// Options say how Start runs a JVM.
type Options struct {
	// Flags are the JVM's options (-XX:+UseZGC, -Xmx256m, ...).
	Flags []string
	// LiveMiB is kept reachable; RateMiB is allocated, as garbage, each
	// second.
	LiveMiB, RateMiB int
	// Namespaced runs the JVM as a container's would: pid 1 of a pid
	// namespace of its own, with a mount namespace whose /tmp is a tmpfs
	// of its own, so its perfdata and attach files are reachable from
	// here only through /proc/<pid>/root. It needs root (unshare).
	Namespaced bool
	// UID, if not 0, runs the JVM as that user (and group): another user's
	// JVM, as a container's usually is. It needs root.
	UID int
}

// Start runs Churn on a real JVM until the test ends, and waits until its
// perfdata can be read.
func Start(t testing.TB, o Options) *JVM {
	t.Helper()
	java := Java(t)
	dir := compile(t)
	args := []string{java, "-XX:ActiveProcessorCount=1", "-XX:TieredStopAtLevel=1", "-Xss256k"}
	args = append(args, o.Flags...)
	args = append(args, "-cp", dir, "Churn", strconv.Itoa(max(o.LiveMiB, 0)), strconv.Itoa(max(o.RateMiB, 0)))
	if o.Namespaced {
		if os.Geteuid() != 0 {
			t.Skip("a JVM in namespaces of its own needs root (unshare)")
		}
		args = append([]string{"unshare", "--pid", "--fork", "--mount", "--kill-child", "--",
			"sh", "-c", `mount -t tmpfs tmpfs /tmp && exec "$0" "$@"`}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if o.UID != 0 {
		if os.Geteuid() != 0 {
			t.Skip("a JVM of another user needs root")
		}
		// The user's cache is not another user's to read: the class goes
		// to a directory anyone may read.
		// (t.TempDir's parent is its user's alone.)
		shared, err := os.MkdirTemp("", "tailor-jvmtest-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(shared) })
		b, err := os.ReadFile(filepath.Join(dir, "Churn.class"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(shared, "Churn.class"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(shared, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, a := range cmd.Args {
			if a == dir {
				cmd.Args[i] = shared
			}
		}
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(o.UID), Gid: uint32(o.UID)}}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// SIGTERM to the JVM first: one that exits removes its perfdata file
	// and attach socket, which a killed one leaves in /tmp. (In
	// namespaces, unshare exits with it.)
	jvmPID := 0
	t.Cleanup(func() {
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		if jvmPID != 0 {
			_ = syscall.Kill(jvmPID, syscall.SIGTERM)
		} else {
			_ = cmd.Process.Kill()
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		// A JVM that does not handle SIGTERM (-Xrs) dies without removing
		// its files; here (not in namespaces), they are in this /tmp.
		if jvmPID != 0 && !o.Namespaced {
			_ = os.Remove(filepath.Join("/tmp", ".java_pid"+strconv.Itoa(jvmPID)))
			if stale, _ := filepath.Glob(filepath.Join("/tmp", "hsperfdata_*", strconv.Itoa(jvmPID))); len(stale) > 0 {
				for _, f := range stale {
					_ = os.Remove(f)
				}
			}
		}
	})
	pid := cmd.Process.Pid
	deadline := time.Now().Add(20 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		if o.Namespaced {
			// unshare's one child, which execs java.
			b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "task", strconv.Itoa(cmd.Process.Pid), "children"))
			var err error
			if pid, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
				last = fmt.Errorf("unshare's child: %q", b)
				continue
			}
		}
		p, err := process.Of("/proc", pid)
		if err != nil {
			last = err
			continue
		}
		b, err := p.ReadPerfData(perfdata.MaxSize)
		if err == nil {
			_, err = perfdata.Parse(b)
		}
		if err != nil {
			last = err
			continue
		}
		jvmPID = p.PID
		return &JVM{Cmd: cmd, Process: p}
	}
	t.Fatalf("the JVM %v did not write its perfdata within 20s: %v", cmd.Args, last)
	return nil
}

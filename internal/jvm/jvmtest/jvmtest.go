package jvmtest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
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

// compile builds Churn once per test binary, in a directory removed at
// exit by the OS's temp cleaning (a test's TempDir would go with the first
// test that compiled it).
func compile(t testing.TB) string {
	t.Helper()
	compileOnce.Do(func() {
		javac, err := exec.LookPath("javac")
		if err != nil {
			compileErr = errors.New("javac is not installed (hack/apps.sh installs openjdk-17-jdk-headless)")
			return
		}
		classDir, compileErr = os.MkdirTemp("", "tailor-jvmtest-")
		if compileErr != nil {
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
	// Wrap, if set, runs java through it (e.g. unshare, for a JVM in
	// namespaces of its own); PID then finds the JVM's pid on the node
	// from the wrapper's.
	Wrap []string
	PID  func(t testing.TB, wrapper int) int
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
	args = append(append([]string(nil), o.Wrap...), args...)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	pid := cmd.Process.Pid
	deadline := time.Now().Add(20 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		if o.PID != nil {
			pid = o.PID(t, cmd.Process.Pid)
			if pid == 0 {
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
		return &JVM{Cmd: cmd, Process: p}
	}
	t.Fatalf("the JVM %v did not write its perfdata within 20s: %v", args, last)
	return nil
}

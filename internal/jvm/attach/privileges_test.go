package attach_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tailorhq/tailor/internal/jvm/attach"
	"github.com/tailorhq/tailor/internal/jvm/jvmtest"
	"github.com/tailorhq/tailor/internal/jvm/perfdata"
	"github.com/tailorhq/tailor/internal/jvm/process"
)

// The capabilities docs/agent.md gives the JVM mode are the ones it
// needs: as root holding only them (the bounding set, as a container
// runtime sets it), against a JVM of another user, the read mode's read
// its counters but cannot move its bound, the softmax mode's do both, and
// without any one of them what it is for fails.
func TestPrivileges(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the agent's JVM mode runs as root with a few capabilities")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("needs setpriv (util-linux) to drop capabilities")
	}
	for _, tc := range []struct {
		name, caps        string
		wantRead, wantSet bool
	}{
		{"no capability", "-all", false, false},
		{"read mode", "-all,+sys_ptrace,+dac_read_search", true, false},
		{"read without DAC_READ_SEARCH", "-all,+sys_ptrace", false, false},
		{"softmax mode", "-all,+sys_ptrace,+dac_override,+kill", true, true},
		{"softmax without SYS_PTRACE", "-all,+dac_override,+kill", false, false},
		{"softmax without KILL", "-all,+sys_ptrace,+dac_override", true, false},
		{"softmax without DAC_OVERRIDE", "-all,+sys_ptrace,+dac_read_search,+kill", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A JVM of its own each: one whose listener an earlier case
			// started would need no signal.
			j := jvmtest.Start(t, jvmtest.Options{Flags: []string{"-XX:+UseZGC", "-Xmx256m"}, LiveMiB: 8, RateMiB: 10, UID: 65534})
			for action, want := range map[string]bool{"read": tc.wantRead, "set": tc.wantSet} {
				cmd := exec.Command(setpriv, "--bounding-set", tc.caps, "--inh-caps", "-all", "--",
					os.Args[0], "-test.run=^TestPrivilegesHelper$", "-test.count=1")
				cmd.Env = append(os.Environ(), "TAILOR_PRIVILEGES_PID="+strconv.Itoa(j.Process.PID), "TAILOR_PRIVILEGES_ACTION="+action)
				out, err := cmd.CombinedOutput()
				got := err == nil
				t.Logf("%s with %s: ok %v: %s", action, tc.caps, got, lastLine(out))
				if got != want {
					t.Errorf("%s with capabilities %s: ok %v, want %v:\n%s", action, tc.caps, got, want, out)
				}
			}
		})
	}
}

// TestPrivilegesHelper is TestPrivileges' child, run with fewer
// capabilities: it reads or moves the JVM's bound, and fails if it cannot.
func TestPrivilegesHelper(t *testing.T) {
	pid, _ := strconv.Atoi(os.Getenv("TAILOR_PRIVILEGES_PID"))
	if pid == 0 {
		t.Skip("run by TestPrivileges")
	}
	p, err := process.Of("/proc", pid)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.ReadPerfData(perfdata.MaxSize)
	if err != nil {
		t.Fatalf("RESULT reading the counters: %v", err)
	}
	c, err := perfdata.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	j, err := perfdata.Summarize(c)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("TAILOR_PRIVILEGES_ACTION") == "read" {
		fmt.Printf("RESULT heap max %d\n", j.HeapMax)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := attach.SetSoftMax(ctx, p, j, 128<<20)
	if err != nil {
		t.Fatalf("RESULT setting the bound: %v", err)
	}
	fmt.Printf("RESULT SoftMaxHeapSize %d\n", got)
}

func lastLine(out []byte) string {
	for _, l := range strings.Split(string(out), "\n") {
		if i := strings.Index(l, "RESULT "); i >= 0 {
			return l[i+len("RESULT "):]
		}
	}
	return strings.TrimSpace(string(out))
}

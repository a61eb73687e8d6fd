//go:build e2e

package chaos

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tailorhq/tailor/test/cluster"
)

// managerProcess is one `tailor manager` running as its own process.
type managerProcess struct {
	name    string
	cmd     *exec.Cmd
	log     string
	metrics string // host:port of its /metrics
	exited  chan struct{}
	err     error // how it exited, once exited is closed
}

// startManager runs `tailor manager` against the local cluster with a 2s
// sync period and 2s checkpoints (the tests' pace) and args after them, and
// stops it when the test ends. Its log is kept in the test's temporary
// directory and printed when the test fails.
func startManager(t *testing.T, name string, args ...string) *managerProcess {
	t.Helper()
	m := &managerProcess{name: name, metrics: cluster.FreeAddr(t), exited: make(chan struct{})}
	m.log = filepath.Join(t.TempDir(), name+".log")
	f, err := os.Create(m.log)
	if err != nil {
		t.Fatal(err)
	}
	all := append([]string{"manager", "--kubeconfig", *kubeconfig, "--sync-period=2s", "--checkpoint-interval=2s",
		"--metrics-bind-address", m.metrics, "--health-probe-bind-address", cluster.FreeAddr(t)}, args...)
	m.cmd = exec.Command(tailorBin, all...)
	m.cmd.Stdout, m.cmd.Stderr = f, f
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("start manager %s: %v", name, err)
	}
	go func() {
		m.err = m.cmd.Wait()
		_ = f.Close()
		close(m.exited)
	}()
	t.Cleanup(func() {
		m.stop(t)
		if t.Failed() {
			t.Logf("log of manager %s (last 60 lines):\n%s", name, m.tail(60))
		}
	})
	return m
}

// alive reports whether the process still runs.
func (m *managerProcess) alive() bool {
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// kill SIGKILLs it, as a node failure or the OOM killer would, and waits.
func (m *managerProcess) kill(t *testing.T) {
	t.Helper()
	if !m.alive() {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.exited
}

// stop SIGTERMs it, as a rollout would, and waits up to 15s.
func (m *managerProcess) stop(t *testing.T) {
	t.Helper()
	if !m.alive() {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(15 * time.Second):
		t.Errorf("manager %s did not stop within 15s of SIGTERM", m.name)
		m.kill(t)
	}
}

// tail is the last n lines of its log.
func (m *managerProcess) tail(n int) string {
	b, err := os.ReadFile(m.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// lastLine is the last line of its log holding s, or "".
func lastLine(m *managerProcess, s string) string {
	b, err := os.ReadFile(m.log)
	if err != nil {
		return ""
	}
	lines := strings.Split(string(b), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], s) {
			return lines[i]
		}
	}
	return ""
}

// metric is the sum of the samples of a counter or gauge on its /metrics
// whose labels include labels; ok is false when it cannot be read (not
// listening yet, or gone).
func (m *managerProcess) metric(name string, labels map[string]string) (float64, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.metrics+"/metrics", nil)
	if err != nil {
		return 0, false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false
	}
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, false
	}
	f, ok := families[name]
	if !ok {
		return 0, true
	}
	sum := 0.0
	for _, s := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range s.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range labels {
			match = match && have[k] == v
		}
		if !match {
			continue
		}
		switch {
		case s.Counter != nil:
			sum += s.GetCounter().GetValue()
		case s.Gauge != nil:
			sum += s.GetGauge().GetValue()
		}
	}
	return sum, true
}

// leading reports whether it holds the leader lease, as client-go's own
// leader_election_master_status says.
func (m *managerProcess) leading() bool {
	v, ok := m.metric("leader_election_master_status", nil)
	return ok && v == 1
}

// hack runs a hack/ script of the repository, e.g. hack("cluster.sh",
// "stop", "kube-apiserver").
func hack(t *testing.T, script string, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "hack", script), args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hack/%s %s: %v\n%s", script, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// signalComponent sends sig to a component of the local cluster.
func signalComponent(t *testing.T, component string, sig syscall.Signal) {
	t.Helper()
	var pid int
	if _, err := fmt.Sscan(hack(t, "cluster.sh", "pid", component), &pid); err != nil {
		t.Fatalf("pid of %s: %v", component, err)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("signal %v to %s (pid %d): %v", sig, component, pid, err)
	}
}

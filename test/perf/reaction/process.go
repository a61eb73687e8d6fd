package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tailorhq/tailor/test/cluster"
)

// managerProcess is one `tailor manager` run as a process of the tailor
// binary, so that a crash is a real death: in-process managers cannot be
// SIGKILLed. test/chaos runs its managers the same way.
type managerProcess struct {
	name    string
	cmd     *exec.Cmd
	log     string
	metrics string // 127.0.0.1:port of its /metrics
	exited  chan struct{}
}

// startManagerProcess runs bin, `tailor manager`, scoped to namespace ns
// and electing its leader under a lease there, with the sync period of the
// other scenarios and 2s checkpoints (the gate's TestLeaderFailover's
// pace). Its log goes to dir/<name>.log.
func startManagerProcess(bin, kubeconfig, dir, name, ns string, syncPeriod time.Duration) (*managerProcess, error) {
	port, err := cluster.FreePort()
	if err != nil {
		return nil, err
	}
	m := &managerProcess{name: name, metrics: fmt.Sprintf("127.0.0.1:%d", port), log: filepath.Join(dir, name+".log"), exited: make(chan struct{})}
	f, err := os.Create(m.log)
	if err != nil {
		return nil, err
	}
	// A loopback metrics address is served plain HTTP: leading reads it.
	m.cmd = exec.Command(bin, "manager", "--kubeconfig", kubeconfig,
		"--sync-period", syncPeriod.String(), "--checkpoint-interval=2s",
		"--leader-elect", "--leader-election-namespace", ns, "--namespaces", ns,
		"--metrics-bind-address", m.metrics, "--health-probe-bind-address", "0")
	m.cmd.Stdout, m.cmd.Stderr = f, f
	if err := m.cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("starting manager %s (%s): %w", name, bin, err)
	}
	go func() {
		_ = m.cmd.Wait()
		_ = f.Close()
		close(m.exited)
	}()
	return m, nil
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

// signal sends sig and waits up to timeout for the process to exit.
func (m *managerProcess) signal(sig syscall.Signal, timeout time.Duration) error {
	if !m.alive() {
		return fmt.Errorf("manager %s had already exited", m.name)
	}
	if err := m.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%v to manager %s: %w", sig, m.name, err)
	}
	select {
	case <-m.exited:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("manager %s still running %s after %v", m.name, timeout, sig)
	}
}

// stop SIGTERMs it, as a rollout would, and SIGKILLs it if it has not
// exited within 40s (controller-runtime's graceful shutdown allows 30s).
func (m *managerProcess) stop() {
	if !m.alive() {
		return
	}
	if err := m.signal(syscall.SIGTERM, 40*time.Second); err != nil {
		fmt.Printf("  %v; killing it\n", err)
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
}

// leading reports whether it holds the leader lease, as client-go's
// leader_election_master_status says; ok is false when its /metrics cannot
// be read (not listening yet, or gone).
func (m *managerProcess) leading() (leading, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.metrics+"/metrics", nil)
	if err != nil {
		return false, false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, false
	}
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return false, false
	}
	for _, s := range families["leader_election_master_status"].GetMetric() {
		if s.GetGauge().GetValue() == 1 {
			return true, true
		}
	}
	return false, true
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

//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// managerLog is where the managers this process runs write their logs, at
// V(1): a failed test shows its namespace's lines from it, so a failure in
// CI, where the log file is gone with the clone, can still be read.
var managerLog string

// openManagerLog sends controller-runtime's logger to a file in
// $TAILOR_E2E_LOG_DIR (hack/e2e.sh sets it to the cluster's log directory;
// the temporary directory otherwise).
func openManagerLog() (func(), error) {
	dir := os.Getenv("TAILOR_E2E_LOG_DIR")
	if dir == "" {
		dir = os.TempDir()
	}
	managerLog = filepath.Join(dir, "e2e-manager.log")
	f, err := os.Create(managerLog)
	if err != nil {
		return nil, fmt.Errorf("manager log: %w", err)
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(f), zap.Level(zapcore.Level(-1)), zap.JSONEncoder()))
	return func() { _ = f.Close() }, nil
}

// logOnFailure prints, when t fails, the last lines of the manager log that
// name ns.
func logOnFailure(t *testing.T, ns string) {
	t.Cleanup(func() {
		if !t.Failed() || managerLog == "" {
			return
		}
		f, err := os.Open(managerLog)
		if err != nil {
			t.Logf("manager log: %v", err)
			return
		}
		defer func() { _ = f.Close() }()
		const keep = 80
		var lines []string
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), ns) {
				lines = append(lines, sc.Text())
				if len(lines) > 2*keep {
					lines = lines[keep:]
				}
			}
		}
		if len(lines) > keep {
			lines = lines[len(lines)-keep:]
		}
		t.Logf("the manager's last %d log lines naming %s (all in %s):\n%s", len(lines), ns, managerLog, strings.Join(lines, "\n"))
	})
}

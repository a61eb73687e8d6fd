package agent

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tailorhq/tailor/internal/agent/cgroup"
	"github.com/tailorhq/tailor/internal/agent/javaheap"
	"github.com/tailorhq/tailor/internal/agent/report"
)

// A manager's reply is read when it says something (200), strictly; a
// 204, as managers without replies answer, is no reply.
func TestPushToReplies(t *testing.T) {
	for name, tc := range map[string]struct {
		status  int
		body    string
		want    []report.Prepare
		wantErr string
	}{
		"no content":  {status: http.StatusNoContent},
		"empty 200":   {status: http.StatusOK},
		"a prepare":   {status: http.StatusOK, body: `{"prepare":[{"id":"c1","memoryLimit":419430400}]}`, want: []report.Prepare{{ID: "c1", MemoryLimit: 400 << 20}}},
		"unknown key": {status: http.StatusOK, body: `{"prepare":[],"resize":true}`, wantErr: "unknown field"},
		"no limit":    {status: http.StatusOK, body: `{"prepare":[{"id":"c1"}]}`, wantErr: "no memory limit"},
		"garbage":     {status: http.StatusOK, body: `{"prep`, wantErr: "the reply"},
		"too large":   {status: http.StatusOK, body: strings.Repeat(" ", report.MaxReplyBytes) + "{}", wantErr: "over"},
		"refused":     {status: http.StatusForbidden, body: "not the agent", wantErr: "not the agent"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			got, err := pushTo(context.Background(), srv.Client(), srv.URL, "token", []byte("{}"))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Prepare); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

// A new prepare makes the next sample push, not the next report
// interval's: the manager is waiting on it. Asked again, it is not news.
func TestRunPushesAgainForAPrepare(t *testing.T) {
	root := t.TempDir()
	for dir, files := range map[string]map[string]string{
		"memory/kubepods/burstable/pod" + uid + "/" + cid: {"memory.usage_in_bytes": "134217728\n", "memory.limit_in_bytes": "268435456\n",
			"memory.stat": "total_inactive_file 0\n", "memory.failcnt": "0\n", "memory.oom_control": "oom_kill 0\n", "cgroup.procs": ""},
		"cpu/kubepods/burstable/pod" + uid + "/" + cid:     {"cpu.stat": "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n"},
		"cpuacct/kubepods/burstable/pod" + uid + "/" + cid: {"cpuacct.usage": "1000\n"},
	} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(root, dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	pushes := 0
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rep report.Report
		if json.NewDecoder(r.Body).Decode(&rep) != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		mu.Lock()
		pushes++
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"prepare":[{"id":"` + cid + `","memoryLimit":134217728}]}`))
	}))
	defer srv.Close()
	trust := NewTrust("example.com", 2*time.Second)
	if _, err := trust.SetBundle(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})); err != nil {
		t.Fatal(err)
	}
	tree := cgroup.Tree{Root: root, Version: cgroup.V1}
	clk := clocktesting.NewFakeClock(t0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{
			Tree: tree, Interval: time.Second, ReportEvery: 5 * time.Second,
			Thresholds: DefaultThresholds(), TokenFile: tokenFile, Managers: StaticManagers{srv.URL},
			Trust: trust, Clock: clk, Log: logr.Discard(),
			JVM: &javaheap.Watcher{Mode: javaheap.Read, Tree: tree, Proc: "/proc", Log: logr.Discard()},
		})
	}()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return pushes
	}
	tick := func(want int) {
		t.Helper()
		stepSecond(t, clk, t0, count, want)
	}
	tick(1) // the first report; its reply asks to prepare
	tick(2) // at once, for the prepare
	for range 4 {
		tick(2) // the same prepare again is not news
	}
	tick(3) // the report interval's
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

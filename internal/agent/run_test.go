package agent

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	discoveryv1 "k8s.io/api/discovery/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/tailorhq/tailor/internal/agent/cgroup"
	"github.com/tailorhq/tailor/internal/agent/report"
)

// Run pushes every ReportEvery while all is calm, and at once, within the
// interval, when a container turns urgent; each push carries the token the
// file holds at that moment. An urgent push the manager refused is made
// again at the next sample, not after the cooldown.
func TestRunPushesUrgentReportsAtOnce(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "memory/kubepods/burstable/pod"+uid, cid)
	cpuDir := filepath.Join(root, "cpu/kubepods/burstable/pod"+uid, cid)
	acctDir := filepath.Join(root, "cpuacct/kubepods/burstable/pod"+uid, cid)
	write := func(d, name, content string) {
		t.Helper()
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setMemory := func(bytes string) {
		write(dir, "memory.usage_in_bytes", bytes+"\n")
	}
	write(acctDir, "cpuacct.usage", "1000\n")
	write(cpuDir, "cpu.stat", "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n")
	setMemory("134217728")
	write(dir, "memory.limit_in_bytes", "268435456\n")
	write(dir, "memory.stat", "total_inactive_file 0\n")
	write(dir, "memory.failcnt", "0\n")
	write(dir, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n")
	tokenFile := filepath.Join(t.TempDir(), "token")
	write(filepath.Dir(tokenFile), "token", "first\n")

	var mu sync.Mutex
	type got struct {
		token  string
		urgent bool
	}
	var pushes []got
	refuse := 0 // how many of the next pushes to refuse
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rep report.Report
		if r.URL.Path != report.Path || json.NewDecoder(r.Body).Decode(&rep) != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		pushes = append(pushes, got{token: r.Header.Get("Authorization"), urgent: rep.Urgent})
		if refuse > 0 {
			refuse--
			http.Error(w, "token review failed", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	// The agent trusts the test server's CA, for the name its certificate
	// carries, as it would the managers' for their Service's.
	trust := NewTrust("example.com", 2*time.Second)
	if _, err := trust.SetBundle(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(t0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{
			Tree: cgroup.Tree{Root: root, Version: cgroup.V1}, Interval: time.Second, ReportEvery: 5 * time.Second,
			Thresholds: DefaultThresholds(), TokenFile: tokenFile, Managers: StaticManagers{srv.URL},
			Trust: trust, Clock: clk, Log: logr.Discard(),
		})
	}()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(pushes)
	}
	tick := func(want int) {
		t.Helper()
		stepSecond(t, clk, t0, count, want)
	}
	tick(1) // the first tick reports at once: nothing was pushed yet
	for range 4 {
		tick(1)
	}
	tick(2) // 5s after the first
	write(filepath.Dir(tokenFile), "token", "rotated\n")
	mu.Lock()
	refuse = 1
	mu.Unlock()
	setMemory("201326592") // +64Mi in a second, 192Mi of 256Mi: urgent
	tick(3)                // refused
	tick(4)                // pushed again, within the 3s cooldown
	tick(4)                // taken: the cooldown paces it again
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if pushes[2].token != "Bearer rotated" || !pushes[2].urgent || !pushes[3].urgent || pushes[1].urgent || pushes[0].token != "Bearer first" {
		t.Errorf("pushes %+v: want the third and fourth urgent, with the rotated token", pushes)
	}
}

// Only ready endpoints on the named port are pushed to.
func TestEndpointURLs(t *testing.T) {
	slice := &discoveryv1.EndpointSlice{
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("metrics"), Port: ptr.To[int32](8080)}, {Name: ptr.To("agent"), Port: ptr.To[int32](8444)}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.0.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			{Addresses: []string{"10.0.0.3"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
			{Addresses: []string{"fd00::4"}},
		},
	}
	other := &discoveryv1.EndpointSlice{
		Ports:     []discoveryv1.EndpointPort{{Name: ptr.To("metrics"), Port: ptr.To[int32](8080)}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.9"}}},
	}
	got := endpointURLs([]*discoveryv1.EndpointSlice{slice, other, slice}, "agent")
	want := []string{"https://10.0.0.2:8444", "https://[fd00::4]:8444"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("URLs %v, want %v", got, want)
	}
}

package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tailorhq/tailor/internal/agent/report"
)

// BenchmarkReceive is the manager's cost of one report of a node of 20
// pod containers (10,000 pods on 500 nodes), its token's review cached:
// at every node's default 5s report interval, 100 of these a second.
func BenchmarkReceive(b *testing.B) {
	clk := clocktesting.NewFakeClock(t0)
	r, _ := newTestReceiver(clk)
	r.PerNode = 1e9
	var rep report.Report
	for i := range 20 {
		th := 0.01
		rep.Containers = append(rep.Containers, report.Container{
			PodUID: fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i), ID: fmt.Sprintf("%064x", i), Time: t0,
			Window: 5, CPU: 0.25, Throttled: &th, WorkingSet: 100 << 20, MemoryLimit: 256 << 20,
		})
	}
	body, err := json.Marshal(rep)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		clk.Step(time.Millisecond)
		req := httptest.NewRequest(http.MethodPost, report.Path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer agent-a")
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if w.Code != http.StatusNoContent {
			b.Fatal(w.Code, w.Body)
		}
	}
}

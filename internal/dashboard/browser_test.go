package dashboard

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tailorhq/tailor/internal/observation"
)

// The pages in a headless browser, on the test server's data: the money
// figures the overview and the workload page draw are the API's, with
// what they are priced at. Debian's chromium (hack/cluster.sh installs
// it; TAILOR_CHROMIUM names another); skipped without one. The cluster's
// browser test (test/e2e, TestDashboard) drives the rest on real data.
func TestPagesShowCosts(t *testing.T) {
	exe := os.Getenv("TAILOR_CHROMIUM")
	if exe == "" {
		exe = "/usr/bin/chromium"
	}
	if _, err := os.Stat(exe); err != nil {
		t.Skipf("no browser at %s: %v", exe, err)
	}
	srv, h := newServer(t)
	nan := math.NaN()
	h.Observe(key, observation.Observation{Time: t0, Containers: []observation.ContainerObservation{{Name: "app", CPU: 0.1, CPURequest: 0.3, CPULimit: nan, CPUTarget: 0.2,
		Memory: 100 << 20, MemoryRequest: 256 << 20, MemoryLimit: nan, MemoryTarget: 200 << 20}},
		Pods: []observation.PodObservation{{Name: "web-1", Node: "n1", CPURequest: 0.3, MemoryRequest: 256 << 20, CPUBefore: 0.5, MemoryBefore: 512 << 20, BeforeKnown: true}}})
	var ov Overview
	getJSON(t, srv.URL+"/api/overview", &ov)
	want := fmt.Sprintf("%.2f → %.2f", ov.Policies[0].CostBefore, ov.Policies[0].CostNow)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1366, 900))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	ctx, cancelTimeout := context.WithTimeout(ctx, time.Minute)
	t.Cleanup(cancelTimeout)
	text := func(page, js string) string {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+page),
			chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := chromedp.Poll[chromedp.Void](`window.tailor && window.tailor.rendered > 0`, chromedp.WithPollingInterval(50*time.Millisecond))(ctx, tg)
				return err
			})); err != nil {
			t.Fatalf("%s: %v", page, err)
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %s: %v", page, js, err)
		}
		return got
	}
	cell := func(sel string) string {
		return `(document.querySelector('` + sel + `') || {}).textContent || ""`
	}
	for sel, w := range map[string]string{
		`tr[data-policy="ns/web"] [data-testid=cost]`: want,
		`[data-testid=total-cost]`:                    want,
		`tr[data-namespace="ns"] [data-testid=cost]`:  want,
		`tr[data-namespace="ns"] [data-testid=freed]`: fmt.Sprintf("%.2f", ov.Namespaces[0].CostBefore-ov.Namespaces[0].CostNow),
		`[data-testid=cost] .big`:                     want,
		`[data-testid=prices]`:                        "At example prices (0.04 a CPU core-hour and 0.005 a GiB-hour of requests; 1 node at its own)",
	} {
		if got := text("/", cell(sel)); !strings.HasPrefix(got, w) {
			t.Errorf("overview %s: %q, want %q", sel, got, w)
		}
	}
	if got := text("/workload/ns/web", cell(`[data-testid=cost]`)); !strings.Contains(got, want) {
		t.Errorf("workload page cost: %q, want %q", got, want)
	}
	if got := text("/workload/ns/web", cell(`[data-testid=pods] tbody tr`)); !strings.Contains(got, want) {
		t.Errorf("workload page pod row: %q, want %q", got, want)
	}
	// A policy sized per node class lists each class's target.
	if got := text("/workload/ns/web", cell(`[data-testid=node-classes] tbody tr:last-child`)); got != "64cpu-256Gi3appcpu 2, memory 1Gi" {
		t.Errorf("workload page's last node class row: %q, want the 64cpu-256Gi class's 3 pods and its target", got)
	}
	main := text("/", `document.getElementById("main").innerText`)
	for _, word := range []string{"null", "undefined", "NaN", "[object"} {
		if strings.Contains(main, word) {
			t.Errorf("overview shows %q:\n%s", word, main)
		}
	}
}

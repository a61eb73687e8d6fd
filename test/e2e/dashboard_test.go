//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/dashboard"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/test/cluster"
)

// browser starts Debian's chromium headless (hack/cluster.sh installs it;
// TAILOR_CHROMIUM names another) and returns a context driving one tab.
func browser(t *testing.T) context.Context {
	t.Helper()
	exe := os.Getenv("TAILOR_CHROMIUM")
	if exe == "" {
		exe = "/usr/bin/chromium"
	}
	if _, err := os.Stat(exe); err != nil {
		t.Fatalf("no browser at %s (hack/cluster.sh up installs Debian's chromium): %v", exe, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // root in CI
		chromedp.DisableGPU,
		// This machine's network is closed: no calls home.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1366, 900), // a laptop screen
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first Run starts the browser, for as long as ctx lives.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	return ctx
}

// artifacts is where the browser tests' screenshots go.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TAILOR_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "bench", "out", "dashboard")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// open loads path and waits for the page to have drawn its data.
func open(t *testing.T, ctx context.Context, base, path, shot string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+path),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Poll[chromedp.Void](`window.tailor && window.tailor.rendered > 0`, chromedp.WithPollingInterval(100*time.Millisecond))(ctx, tg)
			return err
		}),
	); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("%s: screenshot: %v", path, err)
	}
	file := filepath.Join(artifacts(t), shot)
	if err := os.WriteFile(file, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: screenshot %s (%d bytes)", path, file, len(png))
	// Nothing on the page may read as a script's leftovers.
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("main").innerText`))
	if err != nil {
		t.Fatal(err)
	}
	for _, word := range []string{"null", "undefined", "NaN", "[object"} {
		if strings.Contains(text, word) {
			t.Errorf("%s shows %q:\n%s", path, word, text)
		}
	}
}

func evalJS[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	out, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return out
}

func apiGet[T any](t *testing.T, url string) T {
	t.Helper()
	var out T
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	return out
}

// seriesFor is how many series a chart of container's resource draws from
// what the API gave: each figure with a point, and each bound.
func seriesFor(api dashboard.Workload, container, resource string) int {
	n := 0
	for _, se := range api.Series {
		if se.Container != container {
			continue
		}
		cols := [][]*float64{se.CPUUsage, se.CPURequest, se.CPULimit, se.CPUTarget}
		if resource == "memory" {
			cols = [][]*float64{se.MemoryUsage, se.MemoryRequest, se.MemoryLimit, se.MemoryTarget}
		}
		for _, col := range cols {
			for _, v := range col {
				if v != nil {
					n++
					break
				}
			}
		}
	}
	for _, r := range api.Recommendations {
		if r.ContainerName != container {
			continue
		}
		if _, ok := r.LowerBound[corev1.ResourceName(resource)]; ok {
			n++
		}
		if _, ok := r.UpperBound[corev1.ResourceName(resource)]; ok {
			n++
		}
	}
	return n
}

// The dashboard on the local cluster, in a real browser: a Deployment
// tailor lowers in place shows on the overview with its requests before
// and now as the pods have them, on its workload page with one CPU and one
// memory chart per container carrying the series and resize marks the
// manager recorded, and on the cluster page per node. Screenshots go to
// bench/out/dashboard.
func TestDashboard(t *testing.T) {
	cluster.Quiet(t)
	ns := newNamespace(t)
	addr := cluster.FreeAddr(t)
	c := startManagerWith(t, manager.Options{Namespaces: []string{ns}, MetricsSource: "kubelet", KubeletThrottling: true, DashboardAddr: addr})
	base := "http://" + addr
	deployment(t, ns, "web", 1, app().Args("--listen=:8080", "--cpu=20m", "--memory=24Mi").Requests("500m", "64Mi").Limits("1", "256Mi"))
	applyPolicy(t, c, ns, "web", func(s *v1alpha1.TailorPolicySpec) {
		s.Selector = nil
		s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
			Recommender: &v1alpha1.RecommenderOverrides{CPUWindow: &metav1.Duration{Duration: time.Minute}},
		}}}
		s.Behavior.ScaleDown = &v1alpha1.ScaleDownRules{StabilizationWindow: &metav1.Duration{Duration: 10 * time.Second}}
	})
	pod := livePods(t, ns, "web", 1, nil)[0]
	lowered := waitPod(t, &pod, 3*time.Minute, "cpu request lowered and done", func(p *corev1.Pod) bool {
		done, _ := resizeDone(p)
		return p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() < 500 && done
	})
	// A few more syncs, so the charts have points after the resize and the
	// mark has its outcome.
	time.Sleep(8 * time.Second)
	var policy v1alpha1.TailorPolicy
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, &policy); err != nil {
		t.Fatal(err)
	}

	ctx := browser(t)
	key := ns + "/web"

	// Overview: the policy's row says 500m before and what the pod asks
	// now, and the resizes the manager counts. tailor may resize again
	// between a read and the page's: compare with reads around the page,
	// and look again if they moved.
	var row map[string]string
	for attempt := 0; ; attempt++ {
		open(t, ctx, base, "/", "overview.png")
		row = evalJS[map[string]string](t, ctx, fmt.Sprintf(`(() => {
			const r = document.querySelector('tr[data-policy=%q]');
			if (!r) return {};
			const cell = id => (r.querySelector('[data-testid=' + id + ']') || {}).textContent || "";
			return {pods: cell("pods"), cpu: cell("cpu"), resizes: cell("resizes"), link: r.querySelector("a").getAttribute("href")};
		})()`, key))
		now := waitPod(t, lowered, time.Second, "read", func(*corev1.Pod) bool { return true })
		ov := apiGet[dashboard.Overview](t, base+"/api/overview")
		var sum dashboard.PolicySummary
		for _, p := range ov.Policies {
			if p.Namespace+"/"+p.Name == key {
				sum = p
			}
		}
		wantCPU := fmt.Sprintf("500m → %dm", now.Spec.Containers[0].Resources.Requests.Cpu().MilliValue())
		wantResizes := fmt.Sprintf("%d / %d", sum.ResizesHour, sum.ResizesDay)
		if row["cpu"] == wantCPU && row["pods"] == "1" && row["resizes"] == wantResizes && sum.ResizesHour >= 1 {
			break
		}
		if attempt == 2 {
			t.Fatalf("overview row %v; want pods 1, cpu %q (the pod's request now), resizes %q", row, wantCPU, wantResizes)
		}
	}

	// Workload: what the page drew is what the manager recorded.
	open(t, ctx, base, row["link"], "workload.png")
	api := apiGet[dashboard.Workload](t, base+"/api/workload/"+ns+"/web")
	type drawn struct {
		Container, Resource string
		Series, Marks       int
	}
	charts := evalJS[[]drawn](t, ctx, `window.tailor.charts.map(c => ({container: c.container, resource: c.resource, series: c.series, marks: c.marks}))`)
	if len(charts) != 2 || charts[0].Resource != "cpu" || charts[1].Resource != "memory" {
		t.Fatalf("charts %+v; want app's cpu and memory", charts)
	}
	// A series per figure the manager recorded (usage, request, limit,
	// target: the CPU chart has all four), and one per bound the status
	// has.
	for _, ch := range charts {
		if want := seriesFor(api, ch.Container, ch.Resource); ch.Container != "app" || ch.Series != want || ch.Marks != len(api.Marks) {
			t.Errorf("chart %+v; want %d series and the %d marks the manager recorded", ch, want, len(api.Marks))
		}
		if ch.Resource == "cpu" && ch.Series < 4 {
			t.Errorf("cpu chart with %d series; want usage, request, limit and target at least", ch.Series)
		}
	}
	if len(api.Marks) == 0 || api.Marks[0].Result != string(v1alpha1.ResizeResultDone) {
		t.Errorf("marks %+v; want the lowering, Done", api.Marks)
	}
	markRows := evalJS[int](t, ctx, `document.querySelectorAll('[data-testid=marks] tbody tr').length`)
	if markRows != len(api.Marks) {
		t.Errorf("%d rows in the resize table, %d marks", markRows, len(api.Marks))
	}
	target := policy.Status.Recommendation.ContainerRecommendations[0].Target
	recText := evalJS[string](t, ctx, `document.querySelector('[data-testid=recommendation] tbody tr').textContent`)
	if q := target[corev1.ResourceCPU]; !strings.Contains(recText, "cpu "+q.String()) {
		// The status may have moved since it was read: read it again.
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, &policy); err != nil {
			t.Fatal(err)
		}
		if q2 := policy.Status.Recommendation.ContainerRecommendations[0].Target[corev1.ResourceCPU]; !strings.Contains(recText, "cpu "+q2.String()) {
			t.Errorf("recommendation row %q; status target cpu %s", recText, q2.String())
		}
	}
	// Keyboard: the first Tab lands on a link, and every control is a
	// native link or button (no click handlers on plain elements).
	focused := evalJS[string](t, ctx, `(() => { document.querySelector('nav a').focus(); return document.activeElement.tagName; })()`)
	if focused != "A" {
		t.Errorf("focus on %s, want a link", focused)
	}

	// Cluster: a row per node; what tailor frees on a node is what the
	// policies' pods there ask less than their templates. This one-node
	// cluster's node frees what every policy's pods do (other tests'
	// policies included): compare with the overview's totals, read
	// around the page (a sync in between may move them).
	open(t, ctx, base, "/cluster", "cluster.png")
	rows := evalJS[int](t, ctx, `document.querySelectorAll('[data-testid=nodes] tbody tr').length`)
	for attempt := 0; ; attempt++ {
		cl := apiGet[dashboard.Cluster](t, base+"/api/cluster")
		ov := apiGet[dashboard.Overview](t, base+"/api/overview")
		if rows != len(cl.Nodes) || len(cl.Nodes) != 1 {
			t.Fatalf("%d node rows, %d nodes; want the one node", rows, len(cl.Nodes))
		}
		n := cl.Nodes[0]
		freed, want := n.CPUBefore-n.CPURequested, ov.Totals.CPUBefore-ov.Totals.CPUNow
		if n.Name == lowered.Spec.NodeName && n.Managed == ov.Totals.Pods && math.Abs(freed-want) < 0.001 {
			break
		}
		if attempt == 2 {
			t.Fatalf("node %+v frees %.3f cores, the policies' pods %.3f (%d of them)", n, freed, want, ov.Totals.Pods)
		}
		time.Sleep(time.Second)
	}
}

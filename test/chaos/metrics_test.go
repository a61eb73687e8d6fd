//go:build e2e

package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/controller/policy/act"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/cluster"
)

// outage is one way a metrics source fails, and what tailor must say.
type outage struct {
	source string
	args   []string
	// breakIt fails the source; fixIt brings it back.
	breakIt, fixIt func(t *testing.T)
	// phases, when set, are several kinds of bad answers in turn (breakIt
	// starts each); each must show in Ready's message.
	phases []string
	// held says, from the Ready condition, that tailor knows.
	held func(c *metav1Condition, phase string) bool
	// wantEvent marks the start of the outage.
	wantEvent string
}

// For each metrics source, broken in each way it breaks in production: an
// idle pod whose lowering is due (its policy only recommended until then)
// is not lowered while the source is down, hung or answering garbage; the
// policy's Ready condition and an event say why; once the source is back,
// the pod is lowered.
func TestMetricsOutage(t *testing.T) {
	cluster.Quiet(t)
	incomplete := func(c *metav1Condition, phase string) bool {
		if c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "without usable figures") {
			return false
		}
		for _, reason := range garbageReasons[phase] {
			if strings.Contains(c.Message, reason) {
				return true
			}
		}
		return false
	}
	unavailable := func(c *metav1Condition, _ string) bool {
		return c.Status == metav1.ConditionFalse && c.Reason == "MetricsUnavailable"
	}
	fake := &fakePrometheus{upstream: prometheusURL()}
	cases := []struct {
		name string
		outage
	}{{
		// A kubelet that stops answering (SIGSTOP): each read of its
		// pages times out. This cluster has one node, so no usage is
		// left at all (with more, the hung node's pods would be held
		// alone, as the unit tests show). Kept well under the 40s after
		// which the node would be marked NotReady.
		name: "kubelet hung",
		outage: outage{
			source:    "kubelet",
			breakIt:   func(t *testing.T) { signalComponent(t, "kubelet", syscall.SIGSTOP) },
			fixIt:     func(t *testing.T) { signalComponent(t, "kubelet", syscall.SIGCONT) },
			held:      unavailable,
			wantEvent: act.EventMetricsUnavailable,
		},
	}, {
		name: "metrics-server down",
		outage: outage{
			source:    "metrics-server",
			breakIt:   func(t *testing.T) { killAddon(t, "metrics-server") },
			fixIt:     func(t *testing.T) { hack(t, "addons/metrics-server.sh", "up") },
			held:      unavailable,
			wantEvent: act.EventMetricsUnavailable,
		},
	}, {
		name: "prometheus down",
		outage: outage{
			source:    "prometheus",
			args:      []string{"--prometheus-url", prometheusURL(), "--prometheus-rate-window", promRateWindow},
			breakIt:   func(t *testing.T) { killAddon(t, "prometheus") },
			fixIt:     func(t *testing.T) { hack(t, "addons/prometheus.sh", "up") },
			held:      unavailable,
			wantEvent: act.EventMetricsUnavailable,
		},
	}, {
		// Prometheus answering, through a proxy that spoils its answers:
		// stale scrape times, then NaN, negative and absurdly large
		// figures, then missing series. A sync asks for the scrape times
		// first and the figures after, so one sync may meet two phases:
		// its times one's, its figures the next's. "stale" spoils the
		// times alone and the others the figures, so "stale" comes
		// first, where a sane sync is harmless (the policy only
		// recommends until the first phase shows): after any other it
		// could let one sync through unspoiled.
		name: "prometheus garbage",
		outage: outage{
			source:    "prometheus",
			args:      []string{"--prometheus-url", fake.start(t), "--prometheus-rate-window", promRateWindow},
			phases:    []string{"stale", "nan", "negative", "huge", "missing"},
			fixIt:     func(*testing.T) { fake.set("") },
			held:      incomplete,
			wantEvent: act.EventMetricsIncomplete,
		},
	}}
	// The Prometheus cases' pods start first: a new container's CPU is
	// read from Prometheus only once it has run two rate windows, which
	// pass while the other cases run.
	warm := map[string]idlePod{}
	if prometheusURL() != "" {
		for _, tc := range cases {
			if tc.source == "prometheus" {
				warm[tc.name] = newIdlePod(t)
			}
		}
	}
	run := func(t *testing.T, i int) {
		tc := cases[i]
		t.Run(tc.name, func(t *testing.T) {
			if tc.source == "prometheus" && prometheusURL() == "" {
				t.Skip("no Prometheus add-on (TAILOR_PROMETHEUS_URL unset)")
			}
			if i > 0 {
				t.Parallel()
			}
			if tc.phases != nil {
				tc.breakIt = func(*testing.T) {}
			}
			w, ok := warm[tc.name]
			if !ok {
				w = newIdlePod(t)
			}
			holdsThrough(t, tc.outage, fake, w)
		})
	}
	// A hung kubelet starves every source (metrics-server and Prometheus
	// read it too): alone first. Then the outages that break no source of
	// the other's side by side, each manager scoped to its own namespace:
	// metrics-server down beside Prometheus down, then the spoiled answers,
	// which pass through the Prometheus that the second case kills.
	run(t, 0)
	t.Run("side by side", func(t *testing.T) {
		run(t, 1)
		run(t, 2)
	})
	run(t, 3)
}

// idlePod is a pod using next to no CPU under a 300m request, alone in its
// namespace.
type idlePod struct {
	ns  string
	pod *corev1.Pod
}

// idleRequest is the idle pod's CPU request, in millicores: once usage is
// read, it is lowered below it. Small enough for three at once to fit on the
// node beside the other tests' leftovers.
const idleRequest = 300

func newIdlePod(t *testing.T) idlePod {
	t.Helper()
	ns := newNamespace(t)
	pods := replicas(t, ns, "idle", 1, func(c *builder.ContainerWrapper) *builder.ContainerWrapper {
		return c.Requests(fmt.Sprintf("%dm", idleRequest), "64Mi").Limits("1", "128Mi")
	})
	return idlePod{ns: ns, pod: pods[0]}
}

// promRateWindow holds at least two of cAdvisor's samples (10-15s apart
// here) for rate(): half the default minute's warm-up, and the outages'
// figures need no precision.
const promRateWindow = "30s"

// garbageReasons are the problems each spoiled answer may show as. A stale
// scrape time makes the source ask for the figures as of that time, which a
// pod younger than that has none of: Missing, as truthful as Stale. A
// figure beyond what the node could hold is held by the screen every
// source goes through (metrics.Screen), by that reason.
var garbageReasons = map[string][]string{
	"nan": {"Invalid"}, "negative": {"Invalid"}, "huge": {"AboveNodeCapacity"}, "stale": {"Stale", "Missing"}, "missing": {"Missing"},
}

func holdsThrough(t *testing.T, o outage, fake *fakePrometheus, w idlePod) {
	ns, pods := w.ns, []*corev1.Pod{w.pod}
	startManager(t, "m", append([]string{"--leader-elect=false", "--namespaces", ns, "--metrics-source", o.source}, o.args...)...)
	createPolicy(t, ns, "idle", func(s *v1alpha1.TailorPolicySpec) {
		s.UpdatePolicy = &v1alpha1.UpdatePolicy{UpdateMode: v1alpha1.UpdateModeOff}
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
		}}}
		s.Behavior = &v1alpha1.Behavior{
			MinResizeInterval: &metav1.Duration{Duration: 5 * time.Second},
			ScaleDown:         &v1alpha1.ScaleDownRules{StabilizationWindow: &metav1.Duration{Duration: 10 * time.Second}},
		}
	})
	// 3m: a new container's CPU from Prometheus counts two rate windows after it started.
	waitCondition(t, ns, "idle", v1alpha1.ConditionRecommendationProvided, 3*time.Minute, "True", func(c *metav1Condition) bool { return c.Status == metav1.ConditionTrue })
	// Past the scale-down window on sane data: a lowering is due.
	time.Sleep(12 * time.Second)

	o.breakIt(t)
	fixed := false
	defer func() {
		if !fixed {
			o.fixIt(t)
		}
	}()
	phases := o.phases
	if phases == nil {
		phases = []string{""}
	}
	for i, phase := range phases {
		if phase != "" {
			fake.set(phase)
		}
		waitCondition(t, ns, "idle", v1alpha1.ConditionReady, 30*time.Second, "saying why usage is held "+phase, func(c *metav1Condition) bool { return o.held(c, phase) })
		if i == 0 {
			// Now that tailor sees the outage, let it act: the lowering
			// it recommended is due, and must wait for data.
			editPolicy(t, ns, "idle", func(s *v1alpha1.TailorPolicySpec) { s.UpdatePolicy = nil })
		}
		time.Sleep(6 * time.Second)
		if p := waitPod(t, ns, pods[0].Name, time.Second, "read", func(*corev1.Pod) bool { return true }); p.Generation != 1 {
			t.Fatalf("resized during the outage (%s): cpu request %s", strings.TrimSpace("phase "+phase), p.Spec.Containers[0].Resources.Requests.Cpu())
		}
	}
	waitEvent(t, ns, "idle", o.wantEvent, 30*time.Second)
	o.fixIt(t)
	fixed = true
	lowered := waitPod(t, ns, pods[0].Name, 2*time.Minute, "lowered once usage is back", func(p *corev1.Pod) bool {
		return p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() < idleRequest
	})
	t.Logf("lowered to %s once the source was back", lowered.Spec.Containers[0].Resources.Requests.Cpu())
	if o.wantEvent == act.EventMetricsUnavailable {
		waitEvent(t, ns, "idle", act.EventMetricsRestored, 30*time.Second)
	}
	waitCondition(t, ns, "idle", v1alpha1.ConditionReady, time.Minute, "True with nothing held", func(c *metav1Condition) bool {
		return c.Status == metav1.ConditionTrue && !strings.Contains(c.Message, "without usable figures")
	})
}

// prometheusURL is the Prometheus add-on's, "" when it does not run.
func prometheusURL() string { return os.Getenv("TAILOR_PROMETHEUS_URL") }

// killAddon SIGKILLs an add-on of hack/addons, as a crash would.
func killAddon(t *testing.T, name string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/var/lib/tailor-dev", name, name+".pid"))
	if err != nil {
		t.Fatalf("pid of %s: %v", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid of %s: %v", name, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s: %v", name, err)
	}
}

// fakePrometheus passes instant queries to a real Prometheus and, in a
// mode, spoils the answers the way a broken exporter or recording rule
// would.
type fakePrometheus struct {
	upstream string
	mu       sync.Mutex
	mode     string
}

func (f *fakePrometheus) set(mode string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode = mode
}

// start serves it until the test ends and returns its URL.
func (f *fakePrometheus) start(t *testing.T) string {
	t.Helper()
	if f.upstream == "" {
		return ""
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: f, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + l.Addr().String()
}

func (f *fakePrometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := http.PostForm(f.upstream+r.URL.Path, r.Form)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	f.mu.Lock()
	mode := f.mode
	f.mu.Unlock()
	if mode != "" && r.URL.Path == "/api/v1/query" && resp.StatusCode == http.StatusOK {
		body = spoil(body, mode, r.Form)
	}
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// spoil rewrites the samples of a Prometheus instant vector answer.
func spoil(body []byte, mode string, form url.Values) []byte {
	var ans struct {
		Status string `json:"status"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		return body
	}
	stamp := strings.Contains(form.Get("query"), "timestamp(")
	for i := range ans.Data.Result {
		v := &ans.Data.Result[i].Value
		switch mode {
		case "nan":
			if !stamp {
				v[1] = "NaN"
			}
		case "negative":
			if !stamp {
				v[1] = "-1"
			}
		case "huge":
			if !stamp {
				v[1] = "1e+18"
			}
		case "stale":
			if stamp {
				v[1] = fmt.Sprint(time.Now().Add(-time.Hour).Unix())
			}
		}
	}
	if mode == "missing" {
		ans.Data.Result = ans.Data.Result[:0]
	}
	out := bytes.Buffer{}
	if err := json.NewEncoder(&out).Encode(ans); err != nil {
		return body
	}
	return out.Bytes()
}

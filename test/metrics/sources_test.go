//go:build e2e

package metrics

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/metrics/kubelet"
	"github.com/tailorhq/tailor/internal/metrics/metricsserver"
	"github.com/tailorhq/tailor/internal/metrics/prometheus"
	"github.com/tailorhq/tailor/test/cluster"
)

const (
	// steady burns 500m under a 2-core limit and holds 100Mi.
	steadyMemory    = 100 << 20
	cpuLow, cpuHigh = 0.35, 0.65
	// cpuTolerance is how far (cores) a source may be from the cgroup's own
	// counter over the same window. Every source that dates its reading
	// right has agreed within 1% in every recorded run; 10% (or 0.04 cores)
	// leaves room for a contended machine and still catches a reading
	// dated by the wrong window, which was 15-26% off.
	cpuTolerance = 0.04
	// step goes from stepFrom to stepTo millicores.
	stepFrom, stepTo = 200, 1200
)

type source struct {
	metrics.Source
	// settle is how long after the pods start before a reading covers only
	// the steady load (the source's rate window plus a scrape).
	settle time.Duration
	// throttling: the source must report the throttled pod's CFS throttling.
	throttling bool
	// tolerance is the relative error allowed against the cgroup (at least
	// cpuTolerance cores).
	tolerance float64
}

// named is a source under another name, to tell two ways of reading one
// source apart in the subtests' names.
type named struct {
	metrics.Source
	name string
}

func (n named) Name() string { return n.name }

// sources returns every source that runs on the cluster, and skips (with
// the command that starts it) those that do not.
func sources(t *testing.T) []source {
	t.Helper()
	// The kubelets read on their own port, as the manager reads them by
	// default: the local cluster's kubelet serves a certificate the
	// cluster CA signed (hack/cluster.sh), which the admin kubeconfig
	// verifies the apiserver with.
	nodes := func(ctx context.Context, name string) (*corev1.Node, error) {
		return clientset.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	}
	direct, err := kubelet.NewDirect(restConfig, nodes, kubelet.DirectOptions{})
	if err != nil {
		t.Fatalf("kubelet source: %v", err)
	}
	out := []source{{
		Source:     kubelet.New(direct, kubelet.Options{Throttling: true}),
		settle:     25 * time.Second,
		throttling: true,
		tolerance:  0.1,
	}, {
		Source:     named{kubelet.New(kubelet.NewAPIServerProxy(clientset.CoreV1().RESTClient()), kubelet.Options{Throttling: true}), "kubelet-via-apiserver-proxy"},
		settle:     25 * time.Second,
		throttling: true,
		tolerance:  0.1,
	}}
	if _, err := clientset.Discovery().ServerResourcesForGroupVersion("metrics.k8s.io/v1beta1"); err != nil {
		t.Logf("metrics-server: skipped, metrics.k8s.io/v1beta1 is not served (%v); run hack/addons/metrics-server.sh up", err)
	} else {
		out = append(out, source{
			Source:    metricsserver.New(versioned.NewForConfigOrDie(restConfig).MetricsV1beta1(), metricsserver.Options{}),
			settle:    35 * time.Second,
			tolerance: 0.1,
		})
	}
	if url := os.Getenv("TAILOR_PROMETHEUS_URL"); url == "" {
		t.Log("prometheus: skipped, TAILOR_PROMETHEUS_URL is not set; run hack/addons/prometheus.sh up and set it to http://127.0.0.1:9090")
	} else {
		client, err := api.NewClient(api.Config{Address: url})
		if err != nil {
			t.Fatalf("prometheus client for %s: %v", url, err)
		}
		src, err := prometheus.New(client, prometheus.Options{})
		if err != nil {
			t.Fatalf("prometheus source: %v", err)
		}
		// No settle: the source holds a container's CPU as WarmingUp
		// until its series covers the rate window, so every reading it
		// gives must agree with the cgroup. A fixed 95s settle was not
		// enough on a busy CI node (0.351 for 0.422 cores: cAdvisor's
		// first sample came ~40s after the container started). After
		// that it must agree with the cgroup: the source ends each rate
		// at the container's newest sample (it read up to 25% low when it
		// ended them at now: 0.319 for 0.430 cores, 23.5s after the
		// newest sample).
		//
		// 25%, not 10%: cAdvisor's samples come 10-15s apart here, and
		// further apart on a busy node. When the first sample in the 1m
		// window comes more than 1.1 average intervals after the window's
		// start, rate() extrapolates only half an interval back to it and
		// still divides by the whole minute: one reading can miss about
		// 15s of 60. A CI rehearsal read 0.338 for 0.423 cores (20% low,
		// 12s missed) with the series two windows old. The kubelet and
		// metrics-server sources divide by the span their samples cover.
		out = append(out, source{Source: src, throttling: true, tolerance: 0.25})
	}
	return out
}

// usageOf polls src until cond holds for pod's container "app", and returns
// the usage that satisfied it.
func usageOf(ctx context.Context, t *testing.T, src metrics.Source, pod *corev1.Pod, timeout time.Duration, cond func(metrics.Usage) bool) (metrics.Usage, bool) {
	key := metrics.Key{Namespace: pod.Namespace, Pod: pod.Name, Container: "app"}
	var last metrics.Usage
	var lastProblems []metrics.Problem
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		res, err := src.Usage(ctx, []*corev1.Pod{pod})
		if err != nil {
			// Keep polling: an add-on restarting under a busy machine is
			// reported at the end if it never answers.
			lastErr = err
			return false, nil //nolint:nilerr
		}
		u, ok := res.Usage[key]
		lastProblems = res.ProblemsFor(key)
		if !ok {
			return false, nil
		}
		last = u
		return cond(u), nil
	})
	if err != nil {
		t.Logf("%s: %s: condition not met after %s; last usage %+v, problems %v, error %v", src.Name(), key, timeout, last, lastProblems, lastErr)
		return last, false
	}
	return last, true
}

// window is the interval a reading covers, [Time-Window, Time].
func window(u metrics.Usage) (time.Time, time.Time) { return u.Time.Add(-u.Window), u.Time }

// resolution is how far, as a share, the cgroup's truth over a window may
// stray from the window's own rate because it is read every truthTick: a
// tick at each end. metrics-server may give a window under a second (two
// cAdvisor samples close together; 467ms in one CI run, whose truth
// covered half of it), which the truth cannot resolve to 10%.
func resolution(w time.Duration) float64 {
	if w <= 0 {
		return 0
	}
	return 2 * truthTick.Seconds() / w.Seconds()
}

// agrees reports whether a source's figure agrees with the cgroup's.
func agrees(got, want, tolerance float64) bool {
	return math.Abs(got-want) <= max(cpuTolerance, tolerance*want)
}

func TestSources(t *testing.T) {
	cluster.Quiet(t)
	ns := newNamespace(t)
	steady := loadPod(t, ns, "steady", "500m", "100Mi", "2")
	throttled := loadPod(t, ns, "throttled", "1500m", "64Mi", "500m")
	step := loadPod(t, ns, "step", fmt.Sprintf("%dm", stepFrom), "64Mi", "2")
	started := time.Now()
	steadyTruth, throttledTruth, stepTruth := sampleTruth(t, steady), sampleTruth(t, throttled), sampleTruth(t, step)
	srcs := sources(t)

	// The kubelet source reads two pages of each node through the
	// apiserver's proxy: both must name the steady pod's container (the
	// source has nothing to read otherwise). What each read costs is
	// logged for the record; it is a figure, not a gate.
	t.Run("kubelet pages", func(t *testing.T) {
		for _, page := range []string{"metrics/resource", "metrics/cadvisor"} {
			// cAdvisor lists a new container at its next housekeeping,
			// 10-20s after it started.
			var last []byte
			err := wait.PollUntilContextTimeout(context.Background(), time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
				raw, err := clientset.CoreV1().RESTClient().Get().Resource("nodes").Name(steady.Spec.NodeName).
					SubResource("proxy").Suffix(page).DoRaw(ctx)
				last = raw
				return err == nil && bytes.Contains(raw, []byte(`pod="`+steady.Name+`"`)), nil
			})
			if err != nil {
				t.Fatalf("%s never named a series of pod %s within a minute (the kubelet source would read nothing of it); %d bytes last read", page, steady.Name, len(last))
			}
			const n = 10
			var size int
			begin := time.Now()
			for range n {
				raw, err := clientset.CoreV1().RESTClient().Get().Resource("nodes").Name(steady.Spec.NodeName).
					SubResource("proxy").Suffix(page).DoRaw(context.Background())
				if err != nil {
					t.Fatalf("read %s: %v", page, err)
				}
				size = len(raw)
			}
			record(t, "kubelet %-17s %6d bytes, %.1f ms per read through the apiserver proxy (mean of %d, %d pods on the node)",
				page, size, float64(time.Since(begin).Microseconds())/1000/n, n, podsOnNode(t, steady.Spec.NodeName))
		}
	})

	// The steady readings and the step at once: each compares a source
	// with the cgroup over the same window, which holds however busy the
	// machine is, and each waits mostly for its sources (Prometheus's rate
	// window the longest), so run one after the other they cost the phase
	// the step's minute again.
	var phases sync.WaitGroup
	phases.Go(func() { steadySources(t, srcs, ns, steady, throttled, started, steadyTruth, throttledTruth) })
	phases.Go(func() { stepSources(t, srcs, step, started, stepTruth) })
	phases.Wait()
}

// steadySources checks what each source reads of the steady pod and of the
// throttled one against their cgroups.
func steadySources(t *testing.T, srcs []source, ns string, steady, throttled *corev1.Pod, started time.Time, steadyTruth, throttledTruth *truth) {
	// Every source's subtests at once: they only read, and each waits for
	// its own source (Prometheus's rate window the longest). Run from
	// goroutines, not t.Parallel, which the phase's -parallel (the
	// machine's two cores) would let run only two at a time.
	t.Run("steady", func(t *testing.T) {
		var wg sync.WaitGroup
		for _, src := range srcs {
			wg.Go(func() {
				t.Run(src.Name(), func(t *testing.T) {
					ctx := context.Background()
					if _, ok := usageOf(ctx, t, src, steady, 3*time.Minute, func(metrics.Usage) bool { return true }); !ok {
						t.Fatalf("%s never reported the steady pod", src.Name())
					}
					time.Sleep(time.Until(started.Add(src.settle)))
					// Three readings: each must agree, not just one.
					var worstAge time.Duration
					for i := range 3 {
						if i > 0 {
							time.Sleep(5 * time.Second)
						}
						res, err := src.Usage(ctx, []*corev1.Pod{steady})
						if err != nil {
							t.Fatalf("Usage: %v", err)
						}
						key := metrics.Key{Namespace: ns, Pod: steady.Name, Container: "app"}
						u, ok := res.Usage[key]
						if !ok {
							t.Fatalf("reading %d: no usage, problems %v", i, res.ProblemsFor(key))
						}
						age := time.Since(u.Time)
						worstAge = max(worstAge, age)
						cg, haveCG := steadyTruth.cpu(window(u))
						record(t, "%-14s steady 500m/100Mi: cpu %.3f cores (cgroup over the same window %.3f), working set %.1f MiB, window %s, data age %.1fs",
							src.Name(), u.CPU, cg, u.Memory/(1<<20), u.Window, age.Seconds())
						if !haveCG {
							t.Errorf("reading %d: window %s..%s not covered by the cgroup sampler", i, u.Time.Add(-u.Window).Format(time.TimeOnly), u.Time.Format(time.TimeOnly))
						} else if !agrees(u.CPU, cg, src.tolerance+resolution(u.Window)) {
							t.Errorf("reading %d: cpu %.3f cores, the cgroup says %.3f over the same window", i, u.CPU, cg)
						}
						// Whether the source is right is the comparison with the
						// cgroup above. Whether the machine gave the loadgen the
						// 0.5 cores it burns for is no property of the source:
						// said, to read a failure by, not checked.
						if cg < cpuLow || cg > cpuHigh {
							t.Logf("reading %d: the loadgen got %.3f cores of the 0.5 it burns for (contended machine), outside %.2f..%.2f", i, cg, cpuLow, cpuHigh)
						}
						if u.Memory < steadyMemory {
							t.Errorf("reading %d: working set %.1f MiB, want >= 100 MiB held", i, u.Memory/(1<<20))
						}
					}
					record(t, "%-14s freshness: oldest of 3 readings %.1fs", src.Name(), worstAge.Seconds())
				})
			})
			wg.Go(func() {
				t.Run(src.Name()+"/throttled", func(t *testing.T) {
					ctx := context.Background()
					if !src.throttling {
						// The source cannot tell; it must say so with nil, not 0.
						u, ok := usageOf(ctx, t, src, throttled, 3*time.Minute, func(metrics.Usage) bool { return true })
						if !ok {
							t.Fatalf("%s never reported the throttled pod", src.Name())
						}
						if u.Throttled != nil {
							t.Errorf("%s reported throttling %.3f; it has no way to know", src.Name(), *u.Throttled)
						}
						return
					}
					time.Sleep(time.Until(started.Add(src.settle)))
					u, ok := usageOf(ctx, t, src, throttled, 3*time.Minute, func(u metrics.Usage) bool { return u.Throttled != nil })
					if !ok {
						t.Fatalf("%s never reported throttling for 1500m under a 500m limit", src.Name())
					}
					cg, haveCG := throttledTruth.throttledFraction(window(u))
					record(t, "%-14s throttled 1500m under 500m limit: throttled fraction %.3f (cgroup cpu.stat over the same window %.3f), cpu %.3f cores",
						src.Name(), *u.Throttled, cg, u.CPU)
					if !haveCG {
						t.Fatalf("window %s..%s not covered by the cgroup sampler", u.Time.Add(-u.Window).Format(time.TimeOnly), u.Time.Format(time.TimeOnly))
					}
					if math.Abs(*u.Throttled-cg) > 0.15 {
						t.Errorf("throttled fraction %.3f, the cgroup says %.3f over the same window", *u.Throttled, cg)
					}
					switch {
					case cg <= 0.5:
						// A burner starved of CPU by other work reaches its quota
						// in fewer periods; the source can only be as throttled
						// as the cgroup is.
						t.Logf("the cgroup itself was throttled in only %.3f of periods (contended machine); > 0.5 not checked", cg)
					case *u.Throttled <= 0.5:
						t.Errorf("throttled fraction %.3f, want > 0.5", *u.Throttled)
					}
				})
			})
		}
		wg.Wait()
	})
}

// stepSources measures how soon each source sees the step pod's CPU step,
// and that no reading dated before the step shows it.
func stepSources(t *testing.T, srcs []source, step *corev1.Pod, started time.Time, stepTruth *truth) {
	t.Run("step", func(t *testing.T) {
		ctx := context.Background()
		// Every source must first see the low level, or the step would be
		// measured from a reading that never showed it. The step starts
		// with the steady readings, as the pods do: Prometheus's first
		// rate of a new container waits for its series to cover the rate
		// window, over two minutes on a busy machine, so each source has
		// four from the pods' start (run after the steady readings, it
		// once had those two minutes and more).
		for _, src := range srcs {
			if u, ok := usageOf(ctx, t, src, step, max(time.Until(started.Add(4*time.Minute)), 30*time.Second), func(u metrics.Usage) bool { return u.CPU < 0.4 }); !ok {
				t.Fatalf("%s: step pod never showed its %dm baseline (last cpu %.3f)", src.Name(), stepFrom, u.CPU)
			}
		}
		at := time.Now()
		before, _ := stepTruth.cpu(at.Add(-10*time.Second), at)
		setCPU(t, step, stepTo)

		// Poll every source from the step on, keeping each reading; what
		// "visible" means is only known once the cgroup shows the level the
		// loadgen really reaches (less than asked on a busy machine).
		type seen struct {
			at time.Time
			u  metrics.Usage
		}
		var mu sync.Mutex
		threshold := math.Inf(1)
		var wg sync.WaitGroup
		for _, src := range srcs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := metrics.Key{Namespace: step.Namespace, Pod: step.Name, Container: "app"}
				var readings []seen
				deadline := at.Add(3 * time.Minute)
				for time.Now().Before(deadline) {
					if res, err := src.Usage(ctx, []*corev1.Pod{step}); err == nil {
						if u, ok := res.Usage[key]; ok {
							readings = append(readings, seen{at: time.Now(), u: u})
						}
					}
					mu.Lock()
					th := threshold
					mu.Unlock()
					for _, r := range readings {
						if r.u.CPU >= th {
							record(t, "%-14s step visible after %.1fs (reading: cpu %.3f, window %s, measured %.1fs after the step)",
								src.Name(), r.at.Sub(at).Seconds(), r.u.CPU, r.u.Window, r.u.Time.Sub(at).Seconds())
							// A reading that shows the new level must be
							// dated after the step: one dated before it
							// would be a window the source got wrong, and
							// a raise learnt from it learnt against the
							// wrong limit. How soon each source sees a step
							// is make bench-e2e's figure, with its ranges.
							if !r.u.Time.After(at) {
								t.Errorf("%s: a reading dated %s, before the step at %s, shows the stepped level %.3f", src.Name(), r.u.Time.Format(time.StampMilli), at.Format(time.StampMilli), r.u.CPU)
							}
							return
						}
					}
					time.Sleep(500 * time.Millisecond)
				}
				t.Errorf("%s: step not visible after 3m (%d readings)", src.Name(), len(readings))
			}()
		}
		time.Sleep(12 * time.Second)
		after, ok := stepTruth.cpu(at.Add(2*time.Second), time.Now())
		if !ok {
			t.Error("cgroup sampler has no samples after the step")
		}
		mu.Lock()
		threshold = (before + after) / 2
		mu.Unlock()
		record(t, "step %dm -> %dm: cgroup says %.3f -> %.3f cores; visible means a reading >= %.3f", stepFrom, stepTo, before, after, (before+after)/2)
		wg.Wait()
	})
}

func podsOnNode(t *testing.T, node string) int {
	t.Helper()
	pods, err := clientset.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatalf("list pods on %s: %v", node, err)
	}
	return len(pods.Items)
}

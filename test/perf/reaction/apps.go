package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/test/cluster"
)

// The application benchmark (issue #36): each real application through a
// day in minutes, once at a fixed generous size and once under tailor,
// starting small; what its own client measured at the peak, side by side.
//
// generous is the fixed size: the most cpu tailor may raise the
// application's request to (the policy's maxAllowed), its limit at the
// ratio the application's spec has (tailor keeps that ratio as it
// raises: 2x for every application here, so a fixed size limited at its
// request would be the one held back), and the memory limit the
// application starts under, requested too.
const generous = cluster.AppMaxCPU

// day is the load's shape: the peak's clients are the e2e mechanism
// check's, the ramp's a quarter of them.
func day(a cluster.App) []cluster.Stage {
	return []cluster.Stage{{Name: "idle", Seconds: 30}, {Name: "ramp", Clients: max(a.Peak/4, 1), Seconds: 60}, {Name: "peak", Clients: a.Peak, Seconds: 120}}
}

// appRun is one application's run in one arm.
type appRun struct {
	perSecond, latencyMs float64
	samples              int
	// cpuReserved and memReservedMiB are the server's mean requests over
	// the run, polled every 5 s.
	cpuReserved, memReservedMiB float64
	// cpuLimit is the highest cpu limit the server had, in cores.
	cpuLimit           float64
	restarts, oomKills int
	// raised and lowered: seconds from the load's start to tailor's first
	// cpu raise, and from the load's end to its first lowering (-1: none).
	raised, lowered float64
}

type appResult struct {
	app             cluster.App
	fixed, tailor   []appRun
	failures        int
	failureMessages []string
}

func measureApps(m *running, cs *kubernetes.Clientset, o options) []appResult {
	var out []appResult
	for _, name := range strings.Split(o.apps, ",") {
		a, ok := cluster.RealApp(strings.TrimSpace(name))
		if !ok {
			out = append(out, appResult{app: cluster.App{Name: name}, failures: 1, failureMessages: []string{"no such application"}})
			continue
		}
		res := appResult{app: a}
		for i := 0; i < o.appTrials; i++ {
			// The arms take turns at going first: the second runs on a node
			// whose disk still writes back what the first left (PostgreSQL
			// fsyncs every commit), so a fixed order would charge that to
			// one arm.
			arms := []bool{false, true}
			if i%2 == 1 {
				arms = []bool{true, false}
			}
			var err error
			for _, underTailor := range arms {
				var run appRun
				if run, err = appTrial(m.ctx, m.client, cs, a, underTailor, i); err != nil {
					break
				}
				if underTailor {
					res.tailor = append(res.tailor, run)
				} else {
					res.fixed = append(res.fixed, run)
				}
			}
			if err != nil {
				fmt.Printf("  %s trial %d: %v\n", a.Name, i+1, err)
				res.failures++
				res.failureMessages = append(res.failureMessages, firstLine(err))
			}
		}
		out = append(out, res)
	}
	return out
}

// appTrial runs the application through the day in a namespace of its
// own, under a TailorPolicy or at the generous fixed size.
func appTrial(ctx context.Context, c client.Client, cs *kubernetes.Clientset, a cluster.App, underTailor bool, i int) (appRun, error) {
	arm := "fixed"
	if underTailor {
		arm = "tailor"
	}
	ns := fmt.Sprintf("apps-%s-%s-%d-%d", a.Name, arm, i, time.Now().Unix()%100000)
	drop, err := trialNamespace(ctx, cs, ns)
	if err != nil {
		return appRun{}, err
	}
	defer drop()

	server := a.Server()
	if !underTailor {
		req, lim0, req0 := resource.MustParse(generous), resource.MustParse(a.Limits[0]), resource.MustParse(a.Requests[0])
		limit := resource.NewMilliQuantity(req.MilliValue()*lim0.MilliValue()/req0.MilliValue(), resource.DecimalSI)
		server.Requests(generous, a.Limits[1]).Limits(limit.String(), a.Limits[1])
	}
	pod := cluster.LoadgenPod(ns, a.Name, server)
	pod.Labels = map[string]string{"app": a.Name}
	a.RunAs(pod)
	if underTailor {
		if err := c.Create(ctx, cluster.Policy(ns, a.Name, cluster.AppPolicy)); err != nil {
			return appRun{}, err
		}
	}
	if pod, err = runningPod(ctx, cs, pod); err != nil {
		return appRun{}, err
	}
	first := *appStatus(pod)
	initialLimit := pod.Spec.Containers[0].Resources.Limits.Cpu().MilliValue()

	// The server's size, every 5 s until the run ends.
	var (
		mu               sync.Mutex
		cpu, mem         []float64
		raisedAt, endAt  time.Time
		loweredAt        time.Time
		peakLimit        int64
		start            = time.Now()
		pollCtx, stopPol = context.WithCancel(ctx)
	)
	defer stopPol()
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		_ = wait.PollUntilContextCancel(pollCtx, 5*time.Second, true, func(ctx context.Context) (bool, error) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, a.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			r := p.Spec.Containers[0].Resources
			limit := r.Limits.Cpu().MilliValue()
			mu.Lock()
			defer mu.Unlock()
			cpu = append(cpu, float64(r.Requests.Cpu().MilliValue())/1000)
			mem = append(mem, float64(r.Requests.Memory().Value())/(1<<20))
			if limit > initialLimit && raisedAt.IsZero() {
				raisedAt = time.Now()
			}
			if !endAt.IsZero() && limit < peakLimit && loweredAt.IsZero() {
				loweredAt = time.Now()
			}
			if endAt.IsZero() {
				peakLimit = max(peakLimit, limit)
			}
			return false, nil
		})
	}()

	stages := day(a)
	load := a.Client(ns, a.Name+"-load", pod.Status.PodIP, stages...)
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, load, metav1.CreateOptions{}); err != nil {
		return appRun{}, err
	}
	total := 0
	for _, s := range stages {
		total += s.Seconds
	}
	log, err := clientLog(ctx, cs, load, time.Duration(total)*time.Second+3*time.Minute)
	if err != nil {
		return appRun{}, err
	}
	mu.Lock()
	endAt = time.Now()
	mu.Unlock()
	if underTailor {
		// Idle again: tailor lowers it (the policy's 1m window and 30s
		// stabilization), or this run says it did not.
		_ = wait.PollUntilContextTimeout(ctx, time.Second, 4*time.Minute, true, func(context.Context) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			return !loweredAt.IsZero(), nil
		})
	}
	stopPol()
	<-polled

	run := appRun{raised: -1, lowered: -1}
	samples := a.Samples(log)
	run.perSecond, run.latencyMs, run.samples = cluster.StageFigures(samples, "peak")
	if run.samples == 0 {
		return appRun{}, fmt.Errorf("%s: the client reported nothing at its peak; its log ends:\n%s", arm, tail(log, 8))
	}
	run.cpuReserved, run.memReservedMiB, run.cpuLimit = mean(cpu), mean(mem), float64(peakLimit)/1000
	if !raisedAt.IsZero() {
		run.raised = raisedAt.Sub(start).Seconds()
	}
	if !loweredAt.IsZero() {
		run.lowered = loweredAt.Sub(endAt).Seconds()
	}
	final, err := cs.CoreV1().Pods(ns).Get(ctx, a.Name, metav1.GetOptions{})
	if err != nil {
		return appRun{}, err
	}
	st := appStatus(final)
	run.restarts = int(st.RestartCount)
	if st.ContainerID != first.ContainerID && run.restarts == 0 {
		run.restarts = 1
	}
	if t := st.LastTerminationState.Terminated; t != nil && t.Reason == "OOMKilled" {
		run.oomKills++
	}
	fmt.Printf("  %s %s trial %d: peak %.1f/s, %.2f ms (%d samples); cpu reserved %.2f (limit at most %.2f), memory %.0f MiB; raised %.0fs, lowered %.0fs; restarts %d, OOM kills %d\n",
		a.Name, arm, i+1, run.perSecond, run.latencyMs, run.samples, run.cpuReserved, run.cpuLimit, run.memReservedMiB, run.raised, run.lowered, run.restarts, run.oomKills)
	return run, nil
}

func appStatus(p *corev1.Pod) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == "app" {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return &corev1.ContainerStatus{}
}

// runningPod creates the pod and waits until its containers run.
func runningPod(ctx context.Context, cs *kubernetes.Clientset, p *corev1.Pod) (*corev1.Pod, error) {
	if _, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	var got *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		if got, err = cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		return got.Status.Phase == corev1.PodRunning && got.Status.PodIP != "", nil
	})
	if err != nil {
		return nil, fmt.Errorf("pod %s not running: %w", p.Name, err)
	}
	return got, nil
}

// clientLog waits for the client to finish its stages and returns its log.
func clientLog(ctx context.Context, cs *kubernetes.Clientset, p *corev1.Pod, timeout time.Duration) (string, error) {
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, false, func(ctx context.Context) (bool, error) {
		got, err := cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return got.Status.Phase == corev1.PodSucceeded || got.Status.Phase == corev1.PodFailed, nil
	})
	b, lerr := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).Do(ctx).Raw()
	if err != nil {
		return "", fmt.Errorf("the client did not finish within %s: %w; its log ends:\n%s", timeout, err, tail(string(b), 8))
	}
	return string(b), lerr
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

func (r appResult) ratios() (latency, throughput float64) {
	fl, tl := medianOf(r.fixed, func(a appRun) float64 { return a.latencyMs }), medianOf(r.tailor, func(a appRun) float64 { return a.latencyMs })
	fp, tp := medianOf(r.fixed, func(a appRun) float64 { return a.perSecond }), medianOf(r.tailor, func(a appRun) float64 { return a.perSecond })
	if fl == 0 || fp == 0 {
		return 0, 0
	}
	return tl / fl, tp / fp
}

func sum(runs []appRun, f func(appRun) int) int {
	n := 0
	for _, r := range runs {
		n += f(r)
	}
	return n
}

func printApps(apps []appResult) {
	fmt.Printf("\nreal applications: a day in minutes (idle 30s, ramp 60s at a quarter of the peak's clients, peak 120s), at a fixed %s of cpu (limited at the spec's ratio) and under tailor from 100m/200m; medians over the trials of the peak's figures, and of the cpu and memory requested over the day\n", generous)
	fmt.Printf("%-11s %6s %-9s %12s %12s %10s %10s %10s %10s %10s %9s %5s %9s\n", "app", "trials", "arm", "per second", "latency ms", "cpu resv", "cpu limit", "mem MiB", "raised s", "lowered s", "restarts", "OOM", "failures")
	for _, r := range apps {
		for _, arm := range []struct {
			name string
			runs []appRun
		}{{"fixed", r.fixed}, {"tailor", r.tailor}} {
			fmt.Printf("%-11s %6d %-9s %12.1f %12.2f %10.2f %10.2f %10.0f %10.0f %10.0f %9d %5d %9d\n", r.app.Name, len(arm.runs), arm.name,
				medianOf(arm.runs, func(a appRun) float64 { return a.perSecond }), medianOf(arm.runs, func(a appRun) float64 { return a.latencyMs }),
				medianOf(arm.runs, func(a appRun) float64 { return a.cpuReserved }), medianOf(arm.runs, func(a appRun) float64 { return a.cpuLimit }),
				medianOf(arm.runs, func(a appRun) float64 { return a.memReservedMiB }),
				medianOf(arm.runs, func(a appRun) float64 { return a.raised }), medianOf(arm.runs, func(a appRun) float64 { return a.lowered }),
				sum(arm.runs, func(a appRun) int { return a.restarts }), sum(arm.runs, func(a appRun) int { return a.oomKills }), r.failures)
		}
		lat, per := r.ratios()
		fmt.Printf("%-11s %6s %-9s %12.2f %12.2f   (latency is the %s)\n", r.app.Name, "", "tailor/fx", per, lat, r.app.Latency)
	}
}

// appBounds bound each application's run under tailor against the fixed
// size's in the same run.
type appBounds struct {
	LatencyRatioMax    float64 `json:"latencyRatioMax"`
	ThroughputRatioMin float64 `json:"throughputRatioMin"`
}

// checkApps holds the applications to their recorded ranges, and every
// run under tailor to no restart and no OOM kill.
func checkApps(raw json.RawMessage, apps []appResult) ([]string, error) {
	var bounds map[string]appBounds
	if err := json.Unmarshal(raw, &bounds); err != nil {
		return nil, err
	}
	var bad []string
	for _, r := range apps {
		restarts, kills := sum(r.tailor, func(a appRun) int { return a.restarts }), sum(r.tailor, func(a appRun) int { return a.oomKills })
		if r.failures > 0 || len(r.tailor) == 0 || restarts > 0 || kills > 0 {
			bad = append(bad, fmt.Sprintf("%s: %d failures (%s), %d restarts and %d OOM kills under tailor", r.app.Name, r.failures, strings.Join(r.failureMessages, "; "), restarts, kills))
			continue
		}
		b, ok := bounds[r.app.Name]
		if !ok {
			continue
		}
		lat, per := r.ratios()
		if lat > b.LatencyRatioMax || per < b.ThroughputRatioMin {
			bad = append(bad, fmt.Sprintf("%s at its peak under tailor: latency %.2fx (bound %.2fx), throughput %.2fx (bound %.2fx) of the fixed size's", r.app.Name, lat, b.LatencyRatioMax, per, b.ThroughputRatioMin))
		}
	}
	return bad, nil
}

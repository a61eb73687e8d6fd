//go:build e2e

package chaos

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	qos "k8s.io/kubectl/pkg/util/qos"
	"k8s.io/utils/ptr"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/replay"
	"github.com/tailorhq/tailor/test/cluster"
)

// soakSeries are the trace series the soak's pods replay: batch jobs (60,
// 41-81), a steady VM (253), a daily peak (231) and a spread of others.
var soakSeries = []int{60, 253, 231, 41, 45, 50, 70, 100, 120, 150, 180, 200, 220, 260, 300, 320, 350, 400, 450, 480}

// TestSoak runs on demand (make soak; TAILOR_SOAK=1h): 20 pods replay
// usage from the Bitbrains traces (one 5-minute sample every 15s, so an
// hour covers 20 hours of trace), each under its own policy, with two
// managers under leader election, and a chaos event every 4 minutes (a
// kubelet hung for 15s, a pod deleted and recreated, a policy's bounds
// edited, the leader SIGKILLed, the apiserver restarted). It counts what
// must stay zero (QoS class changes, restarts the resize policy forbids,
// OOM kills after a lowering), the resizes per pod-hour and each manager's
// memory over its life, and fails on a broken promise.
func TestSoak(t *testing.T) {
	cluster.Quiet(t)
	d := os.Getenv("TAILOR_SOAK")
	if d == "" {
		t.Skip("on demand: make soak (TAILOR_SOAK=1h)")
	}
	duration, err := time.ParseDuration(d)
	if err != nil {
		t.Fatalf("TAILOR_SOAK=%q: %v", d, err)
	}
	dir := os.Getenv("TAILOR_TRACES")
	if dir == "" {
		dir = filepath.Join(root, "..", "shared", "traces", "bitbrains-rnd", "2013-7")
	}
	var series []replay.Series
	for _, n := range soakSeries {
		s, err := replay.ReadFile(filepath.Join(dir, strconv.Itoa(n)+".csv.gz"), replay.FormatBitbrains)
		if err != nil {
			t.Fatalf("trace %d: %v", n, err)
		}
		series = append(series, s)
	}
	ns := newNamespace(t)
	s := &soak{t: t, ns: ns, start: time.Now(), qos: map[string]corev1.PodQOSClass{}, lowered: map[string]time.Time{}}
	for i := range series {
		name := fmt.Sprintf("soak-%02d", i)
		s.createPod(name, i%5 == 0)
		createPolicy(t, ns, name, func(sp *v1alpha1.TailorPolicySpec) {
			sp.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
				ContainerName: "*", MaxAllowed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			}}}
			sp.Behavior = &v1alpha1.Behavior{
				MinResizeInterval: &metav1.Duration{Duration: 30 * time.Second},
				ScaleDown:         &v1alpha1.ScaleDownRules{StabilizationWindow: &metav1.Duration{Duration: 2 * time.Minute}},
			}
		})
	}
	for i := range series {
		p := waitPod(t, ns, fmt.Sprintf("soak-%02d", i), 2*time.Minute, "running", func(p *corev1.Pod) bool { return p.Status.PodIP != "" && p.Status.Phase == corev1.PodRunning })
		s.qos[p.Name] = qos.GetPodQOS(p)
	}
	rec := record(t, ns)
	args := []string{"--leader-elect", "--leader-election-namespace", ns}
	s.managers = []*managerProcess{startManager(t, "m0", args...), startManager(t, "m1", args...)}
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { s.replay(ctx, series) })
	wg.Go(func() { s.watchPods(ctx) })
	wg.Go(func() { s.sampleMemory(ctx) })
	every := 4 * time.Minute
	if v := os.Getenv("TAILOR_SOAK_EVERY"); v != "" {
		if every, err = time.ParseDuration(v); err != nil {
			t.Fatalf("TAILOR_SOAK_EVERY=%q: %v", v, err)
		}
	}
	wg.Go(func() { s.chaos(ctx, args, every) })
	wg.Wait()

	s.report(rec, duration, len(series))
}

type soak struct {
	t        *testing.T
	ns       string
	start    time.Time
	mu       sync.Mutex
	managers []*managerProcess
	// qos is each pod's class at creation.
	qos map[string]corev1.PodQOSClass
	// lowered is when each pod's memory request was last lowered.
	lowered map[string]time.Time
	// counts
	qosChanges, restartsAgainstPolicy, oomKills, oomAfterLowering int
	events                                                        []string
	rss                                                           map[string][]int64
	lastMem                                                       map[string]int64
	restarts                                                      map[string]int32
}

func (s *soak) createPod(name string, guaranteed bool) {
	c := cluster.Loadgen().Requests("50m", "96Mi").Limits("400m", "384Mi")
	if guaranteed {
		c = cluster.Loadgen().Requests("100m", "256Mi").Limits("100m", "256Mi")
	}
	p := cluster.LoadgenPod(s.ns, name, c)
	p.Labels = map[string]string{"app": name}
	if _, err := clientset.CoreV1().Pods(s.ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		s.t.Errorf("create pod %s: %v", name, err)
	}
}

// replay drives each pod's load generator through its series, normalised
// to 10-300m CPU and 20-200Mi memory.
func (s *soak) replay(ctx context.Context, series []replay.Series) {
	const step = 15 * time.Second
	tick := time.NewTicker(step)
	defer tick.Stop()
	for k := 0; ; k++ {
		for i, sr := range series {
			var maxCPU, maxMem float64
			for _, smp := range sr.Samples {
				maxCPU = max(maxCPU, smp.CPU)
				if !math.IsNaN(smp.Memory) {
					maxMem = max(maxMem, smp.Memory)
				}
			}
			smp := sr.Samples[k%len(sr.Samples)]
			cpu := 10 + int(290*smp.CPU/max(maxCPU, 1e-9))
			mem := 20.0
			if !math.IsNaN(smp.Memory) {
				mem += 180 * smp.Memory / max(maxMem, 1)
			}
			p, err := clientset.CoreV1().Pods(s.ns).Get(ctx, fmt.Sprintf("soak-%02d", i), metav1.GetOptions{})
			if err != nil || p.Status.PodIP == "" {
				continue
			}
			dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			_ = cluster.Drive(dctx, p, "/cpu?millicores="+strconv.Itoa(cpu))
			_ = cluster.Drive(dctx, p, fmt.Sprintf("/memory?size=%dMi", int(mem)))
			cancel()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// watchPods counts QoS class changes, memory lowerings and each container
// restart with its reason, as they happen.
func (s *soak) watchPods(ctx context.Context) {
	s.restarts, s.lastMem = map[string]int32{}, map[string]int64{}
	for ctx.Err() == nil {
		w, err := clientset.CoreV1().Pods(s.ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			s.seePod(p)
		}
	}
}

func (s *soak) seePod(p *corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if want, ok := s.qos[p.Name]; ok && qos.GetPodQOS(p) != want {
		s.qosChanges++
		s.events = append(s.events, fmt.Sprintf("%s QoS %s -> %s", p.Name, want, qos.GetPodQOS(p)))
		s.qos[p.Name] = qos.GetPodQOS(p)
	}
	key := string(p.UID)
	mem := p.Spec.Containers[0].Resources.Requests.Memory().Value()
	if last, ok := s.lastMem[key]; ok && mem < last {
		s.lowered[key] = time.Now()
	}
	s.lastMem[key] = mem
	for _, cs := range p.Status.ContainerStatuses {
		if cs.RestartCount <= s.restarts[key] {
			continue
		}
		s.restarts[key] = cs.RestartCount
		reason, killed := "unknown", false
		if term := cs.LastTerminationState.Terminated; term != nil {
			// On this cgroup v1 node a memcg OOM kill shows as Error,
			// exit code 137 (see metrics.Termination).
			reason, killed = fmt.Sprintf("%s, exit %d", term.Reason, term.ExitCode), term.Reason == "OOMKilled" || term.ExitCode == 137
		}
		if killed {
			s.oomKills++
			if at, ok := s.lowered[key]; ok && time.Since(at) < 10*time.Minute {
				s.oomAfterLowering++
			}
		} else {
			// The containers' resize policies are the default
			// (NotRequired): no resize may restart them.
			s.restartsAgainstPolicy++
		}
		s.events = append(s.events, fmt.Sprintf("%s %s restarted (%s)", time.Now().Format("15:04:05"), p.Name, reason))
	}
}

// sampleMemory records each manager's RSS every 30s.
func (s *soak) sampleMemory(ctx context.Context) {
	s.rss = map[string][]int64{}
	for {
		s.mu.Lock()
		for _, m := range s.managers {
			if m.alive() {
				if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", m.cmd.Process.Pid)); err == nil {
					for _, line := range strings.Split(string(b), "\n") {
						if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
							kb, _ := strconv.ParseInt(f[1], 10, 64)
							s.rss[m.name] = append(s.rss[m.name], kb<<10)
						}
					}
				}
			}
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(30 * time.Second):
		}
	}
}

// chaos breaks something every period, in turn.
func (s *soak) chaos(ctx context.Context, args []string, every time.Duration) {
	rng := rand.New(rand.NewPCG(1, 2))
	kinds := []string{"kubelet-hang", "pod-delete", "policy-edit", "leader-kill", "kubelet-hang", "pod-delete", "policy-edit", "apiserver-restart"}
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		kind := kinds[n%len(kinds)]
		pod := fmt.Sprintf("soak-%02d", rng.IntN(len(soakSeries)))
		s.mu.Lock()
		s.events = append(s.events, time.Now().Format("15:04:05")+" chaos: "+kind)
		s.mu.Unlock()
		switch kind {
		case "kubelet-hang":
			signalComponent(s.t, "kubelet", syscall.SIGSTOP)
			time.Sleep(15 * time.Second)
			signalComponent(s.t, "kubelet", syscall.SIGCONT)
		case "pod-delete":
			_ = clientset.CoreV1().Pods(s.ns).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			for ctx.Err() == nil {
				if _, err := clientset.CoreV1().Pods(s.ns).Get(ctx, pod, metav1.GetOptions{}); err != nil {
					break
				}
				time.Sleep(time.Second)
			}
			s.createPod(pod, strings.HasSuffix(pod, "0") || strings.HasSuffix(pod, "5"))
		case "policy-edit":
			editPolicy(s.t, s.ns, pod, func(sp *v1alpha1.TailorPolicySpec) {
				sp.ResourcePolicy.ContainerPolicies[0].MaxAllowed[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(500+rng.IntN(500)), resource.DecimalSI)
			})
		case "leader-kill":
			s.mu.Lock()
			for i, m := range s.managers {
				if m.alive() && m.leading() {
					m.kill(s.t)
					s.managers[i] = startManager(s.t, fmt.Sprintf("m%d", n+2), args...)
				}
			}
			s.mu.Unlock()
		case "apiserver-restart":
			hack(s.t, "cluster.sh", "stop", "kube-apiserver")
			hack(s.t, "cluster.sh", "start", "kube-apiserver")
			// The leader exits when it cannot renew its lease through the
			// outage; its Deployment would restart it.
			time.Sleep(10 * time.Second)
			s.mu.Lock()
			for i, m := range s.managers {
				if !m.alive() {
					s.managers[i] = startManager(s.t, fmt.Sprintf("m%d", n+2), args...)
				}
			}
			s.mu.Unlock()
		}
	}
}

func (s *soak) report(rec *recorder, duration time.Duration, pods int) {
	t := s.t
	s.mu.Lock()
	defer s.mu.Unlock()
	resizes := len(rec.since(s.start))
	podHours := float64(pods) * duration.Hours()
	var b strings.Builder
	fmt.Fprintf(&b, "soak: %s, %d pods, %d policies, 2 managers under leader election\n", duration, pods, pods)
	fmt.Fprintf(&b, "  resizes: %d (%.1f per pod-hour)\n", resizes, float64(resizes)/podHours)
	fmt.Fprintf(&b, "  QoS class changes: %d\n  restarts against the resize policy: %d\n  OOM kills: %d, of them within 10m of a memory lowering: %d\n",
		s.qosChanges, s.restartsAgainstPolicy, s.oomKills, s.oomAfterLowering)
	names := make([]string, 0, len(s.rss))
	for n := range s.rss {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r := s.rss[n]
		peak := int64(0)
		for _, v := range r {
			peak = max(peak, v)
		}
		fmt.Fprintf(&b, "  manager %s RSS over %s: first %.1f MiB, last %.1f MiB, peak %.1f MiB\n", n, time.Duration(len(r))*30*time.Second,
			float64(r[0])/(1<<20), float64(r[len(r)-1])/(1<<20), float64(peak)/(1<<20))
	}
	b.WriteString("  events:\n    " + strings.Join(s.events, "\n    "))
	t.Log(b.String())
	if s.qosChanges != 0 || s.restartsAgainstPolicy != 0 || s.oomAfterLowering != 0 {
		t.Errorf("broken promises: %d QoS change(s), %d restart(s) against policy, %d OOM kill(s) after a lowering", s.qosChanges, s.restartsAgainstPolicy, s.oomAfterLowering)
	}
}

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/internal/recommend"
	"github.com/tailorhq/tailor/test/cluster"
)

type options struct {
	kubeconfig    string
	sources       string
	trials        int
	agentTrials   int
	memoryTrials  int
	costPods      int
	boostTrials   int
	hpaTrials     int
	syncPeriod    time.Duration
	agentSync     time.Duration
	prometheusURL string
	ranges        string
	timeout       time.Duration
	// takeoverTrials and tailorBin: leader takeovers, by managers run as
	// processes of the tailor binary.
	takeoverTrials int
	tailorBin      string
	// apps and appTrials: the real applications' day, at a fixed size and
	// under tailor.
	apps      string
	appTrials int
}

func main() {
	var o options
	flag.StringVar(&o.sources, "sources", "kubelet,metrics-server,prometheus,agent", "metrics sources to measure")
	flag.IntVar(&o.trials, "trials", 5, "steps per source")
	flag.IntVar(&o.agentTrials, "agent-trials", 20, "steps for the agent source (its goal is a p95, which wants at least 20)")
	flag.IntVar(&o.memoryTrials, "memory-trials", 3, "memory ramps per source (0: none)")
	flag.IntVar(&o.boostTrials, "boost-trials", 3, "slow starters started at their template's size and with a 4x startup boost, one pair per trial (0: none)")
	flag.IntVar(&o.hpaTrials, "hpa-trials", 3, "HPA ramps (3m20s each) alone and with a TailorPolicy, one pair per trial (0: none)")
	flag.IntVar(&o.takeoverTrials, "takeover-trials", 5, "leader takeovers, one after a SIGKILL and one after a SIGTERM per trial, by two managers run as processes of --tailor-bin (0: none)")
	flag.StringVar(&o.tailorBin, "tailor-bin", "bin/tailor", "the tailor binary the takeover trials run their managers from (make build)")
	flag.StringVar(&o.apps, "apps", "redis,postgres,jvm,jvm-maxram,jvm-zgc", "real applications run through a day in minutes at a fixed size and under tailor (hack/apps.sh build; the images must be imported)")
	flag.IntVar(&o.appTrials, "app-trials", 1, "days per application and arm (0: none; about 8 minutes per application and trial)")
	flag.IntVar(&o.costPods, "agent-cost-pods", 25, "pods of 4 containers each the agent's cost is measured beside (0: not measured)")
	flag.DurationVar(&o.agentSync, "agent-sync-period", 10*time.Second, "the manager's sync period with the agent source: the manager's default, so its reaction comes from the agent's wake-ups")
	flag.DurationVar(&o.syncPeriod, "sync-period", 2*time.Second, "the manager's sync period, the same for every source")
	flag.StringVar(&o.prometheusURL, "prometheus-url", "http://127.0.0.1:9090", "Prometheus for the prometheus source")
	flag.StringVar(&o.ranges, "ranges", "", "JSON file of p95 bounds per source; the run fails outside them")
	flag.DurationVar(&o.timeout, "timeout", 90*time.Second, "a step not reacted to within this counts as a failure")
	flag.Parse()
	// controller-runtime registers --kubeconfig itself.
	o.kubeconfig = "/var/lib/tailor-dev/admin.kubeconfig"
	if f := flag.Lookup("kubeconfig"); f != nil && f.Value.String() != "" {
		o.kubeconfig = f.Value.String()
	}
	// Teardown of each trial's namespace makes expected event and status
	// write failures; the figures are what this program prints.
	ctrl.SetLogger(zap.New(zap.Level(zapcore.FatalLevel)))
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-e2e:", err)
		os.Exit(1)
	}
}

type result struct {
	source   string
	seconds  []float64
	failures int
}

func run(o options) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %s (is the cluster up? make cluster-up): %w", o.kubeconfig, err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	if err := cluster.InstallCRDs(context.Background(), dynamic.NewForConfigOrDie(cfg)); err != nil {
		return err
	}
	node, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	if len(node.Items) == 0 {
		return fmt.Errorf("the cluster has no node")
	}
	fmt.Printf("machine: %d cpus (%s/%s), node %s (%s, kubelet %s), sync period %s, %d trials per source\n",
		runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, node.Items[0].Name, node.Items[0].Status.NodeInfo.ContainerRuntimeVersion,
		node.Items[0].Status.NodeInfo.KubeletVersion, o.syncPeriod, o.trials)
	fmt.Println("measure: load step idle (20m) -> 1000m on a 200m cpu limit; seconds until the container's cpu.cfs_quota_us is raised")

	var results []result
	var ramps []rampResult
	var cost *agentCost
	for _, src := range strings.Split(o.sources, ",") {
		src = strings.TrimSpace(src)
		if src == "" {
			continue
		}
		m, err := startManager(cfg, cs, o, src, thinMemoryMargin())
		if err != nil {
			return fmt.Errorf("source %s: %w", src, err)
		}
		res := measure(m, cs, o, src)
		results = append(results, res)
		if o.memoryTrials > 0 {
			ramps = append(ramps, measureRamps(m, cs, o, src))
		}
		if src == "agent" && o.costPods > 0 {
			if cost, err = measureAgentCost(m.ctx, cs, m.agent, o.costPods); err != nil {
				m.stop()
				return fmt.Errorf("agent cost: %w", err)
			}
		}
		m.stop()
	}
	var boost *boostResult
	var hpa *hpaResult
	var apps []appResult
	if o.boostTrials > 0 || o.hpaTrials > 0 || o.appTrials > 0 && o.apps != "" {
		m, err := startManager(cfg, cs, o, "kubelet", recommend.DefaultConfig())
		if err != nil {
			return fmt.Errorf("startup boost and HPA: %w", err)
		}
		dyn := dynamic.NewForConfigOrDie(cfg)
		if o.boostTrials > 0 {
			b := measureBoost(m, cs, dyn, o)
			boost = &b
		}
		if o.hpaTrials > 0 {
			h := measureHPA(m, cs, dyn, o)
			hpa = &h
		}
		if o.appTrials > 0 && o.apps != "" {
			apps = measureApps(m, cs, o)
		}
		m.stop()
	}
	// Last, with no manager of this process running: those see every
	// namespace, and would act on the trials' policy too.
	var takeover *takeoverResult
	if o.takeoverTrials > 0 {
		c, err := uncachedClient(cfg)
		if err != nil {
			return err
		}
		t, err := measureTakeover(cs, c, o)
		if err != nil {
			return fmt.Errorf("takeover: %w", err)
		}
		takeover = &t
	}

	if len(results) > 0 {
		fmt.Printf("\ncpu step: idle (20m) -> 1000m on a 200m limit, seconds to the raised cpu.cfs_quota_us\n")
		fmt.Printf("%-15s %7s %8s %8s %8s %9s\n", "source", "trials", "p50 s", "p95 s", "max s", "failures")
		for _, r := range results {
			fmt.Printf("%-15s %7d %8.1f %8.1f %8.1f %9d\n", r.source, len(r.seconds)+r.failures,
				percentile(r.seconds, 50), percentile(r.seconds, 95), percentile(r.seconds, 100), r.failures)
		}
	}
	if len(ramps) > 0 {
		fmt.Printf("\nmemory ramp: 128Mi -> 384Mi at 50 MiB/s under a 256Mi limit (from half of it), seconds to the raised memory limit, and OOM kills\n")
		fmt.Printf("%-15s %7s %8s %8s %8s %9s %10s\n", "source", "trials", "p50 s", "p95 s", "max s", "OOM kills", "not raised")
		for _, r := range ramps {
			fmt.Printf("%-15s %7d %8.1f %8.1f %8.1f %9d %10d\n", r.source, r.trials,
				percentile(r.seconds, 50), percentile(r.seconds, 95), percentile(r.seconds, 100), r.oomKills, r.trials-len(r.seconds))
		}
	}
	if cost != nil {
		fmt.Printf("\nagent cost beside %d pod containers on the node, over %s: %.4f cores (%.2f%% of a core), working set %.1f MiB, peak RSS %.1f MiB\n",
			cost.containers, cost.over, cost.cores, cost.cores*100, cost.workingSetMiB, cost.rssMiB)
	}
	if boost != nil {
		fmt.Printf("\nstartup boost: a slow starter (3s of CPU time before Ready, 100m/200m), time to Ready at its template's size and with a 4x boost\n")
		fmt.Printf("%7s %14s %16s %14s %9s\n", "trials", "plain p50 s", "boosted p50 s", "boosted/plain", "failures")
		fmt.Printf("%7d %14.1f %16.1f %14.2f %9d\n", len(boost.plain)+boost.failures, percentile(boost.plain, 50), percentile(boost.boosted, 50), boost.ratio(), boost.failures)
	}
	if hpa != nil {
		fmt.Printf("\nHPA on 60%% cpu utilization under a 60m -> 420m -> 60m ramp, alone and with a TailorPolicy, medians over the trials\n")
		fmt.Printf("%7s %15s %17s %15s %17s %9s\n", "trials", "alone changes", "alone reversals", "with changes", "with reversals", "failures")
		fmt.Printf("%7d %15.1f %17.1f %15.1f %17.1f %9d\n", len(hpa.alone)+hpa.failures, medianOf(hpa.alone, changes), medianOf(hpa.alone, reversals),
			medianOf(hpa.with, changes), medianOf(hpa.with, reversals), hpa.failures)
	}
	if takeover != nil {
		fmt.Printf("\ntakeover: two managers under leader election (lease %s, renew %s, retry %s, sync period %s), the leader stopped; seconds from the signal to the standby's acquireTime on the Lease and to its first resize (the pod's managedFields)\n",
			manager.DefaultLeaseDuration, manager.DefaultRenewDeadline, manager.DefaultRetryPeriod, o.syncPeriod)
		fmt.Printf("%-9s %7s %12s %12s %13s %13s %11s %9s\n", "stop", "trials", "lease p50 s", "lease max s", "resize p50 s", "resize max s", "exit max s", "failures")
		for _, k := range []struct {
			name     string
			runs     []failover
			failures int
		}{{"SIGKILL", takeover.crash, takeover.crashFailures}, {"SIGTERM", takeover.graceful, takeover.gracefulFailures}} {
			fmt.Printf("%-9s %7d %12.1f %12.1f %13.1f %13.1f %11.1f %9d\n", k.name, len(k.runs)+k.failures,
				percentile(seconds(k.runs, leaseTime), 50), percentile(seconds(k.runs, leaseTime), 100),
				percentile(seconds(k.runs, resizeTime), 50), percentile(seconds(k.runs, resizeTime), 100),
				percentile(seconds(k.runs, exitTime), 100), k.failures)
		}
	}
	if len(apps) > 0 {
		printApps(apps)
	}
	if o.ranges == "" {
		return nil
	}
	return check(o.ranges, results, ramps, cost, boost, hpa, takeover, apps)
}

// uncachedClient reads and writes tailor's types straight from the
// apiserver, for the takeover trials, which run no manager in this process.
func uncachedClient(cfg *rest.Config) (client.Client, error) {
	scheme, err := manager.Scheme()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// running is a manager in this process, reading one source.
type running struct {
	ctx    context.Context
	client client.Client
	stop   func()
	// agent is the node agent the manager reads, for the agent source.
	agent *cluster.Agent
}

// thinMemoryMargin is the recommender of the sources' trials: a thin
// memory margin for every source, so the memory ramp starts with its limit
// untouched and only the ramp can raise it.
func thinMemoryMargin() recommend.Config {
	rec := recommend.DefaultConfig()
	rec.MemoryMinMargin, rec.MemoryJitterMargin = 16<<20, 0
	return rec
}

func startManager(cfg *rest.Config, cs *kubernetes.Clientset, o options, source string, rec recommend.Config) (*running, error) {
	mo := manager.Options{
		MetricsSource: source, PrometheusURL: o.prometheusURL, KubeletThrottling: true, SyncPeriod: o.syncPeriod,
		MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true, Recommender: &rec,
	}
	ctx, cancel := context.WithCancel(context.Background())
	var ag *cluster.Agent
	if source == "agent" {
		ns := fmt.Sprintf("reaction-agent-%d", time.Now().Unix()%100000)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, cluster.NewNamespace(ns, nil), metav1.CreateOptions{}); err != nil {
			cancel()
			return nil, err
		}
		port, err := cluster.FreePort()
		if err == nil {
			ag, err = cluster.DeployAgent(ctx, cs, ns, port)
		}
		if err != nil {
			cancel()
			_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
			return nil, fmt.Errorf("deploying the agent: %w", err)
		}
		mo.AgentAddr, mo.AgentServiceAccount, mo.AgentService, mo.AgentFallback, mo.SyncPeriod = fmt.Sprintf(":%d", port), ag.ServiceAccount, ag.Service, "kubelet", o.agentSync
	}
	mgr, err := manager.New(cfg, mo)
	if err != nil {
		cancel()
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return &running{ctx: ctx, client: mgr.GetClient(), agent: ag, stop: func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintf(os.Stderr, "  %s manager stopped with: %v\n", source, err)
		}
		if ag != nil {
			_ = cs.CoreV1().Namespaces().Delete(context.Background(), ag.Namespace, metav1.DeleteOptions{})
		}
	}}, nil
}

func measure(m *running, cs *kubernetes.Clientset, o options, source string) result {
	res := result{source: source}
	trials := o.trials
	if source == "agent" {
		trials = o.agentTrials
	}
	for i := 0; i < trials; i++ {
		secs, err := trial(m.ctx, m.client, cs, o, source, i)
		if err != nil {
			fmt.Printf("  %s trial %d: %v\n", source, i+1, err)
			res.failures++
			continue
		}
		fmt.Printf("  %s trial %d: %.1fs\n", source, i+1, secs)
		res.seconds = append(res.seconds, secs)
	}
	return res
}

// trial runs one idle -> full CPU step in a fresh namespace.
func trial(ctx context.Context, c client.Client, cs *kubernetes.Clientset, o options, source string, i int) (float64, error) {
	ns := fmt.Sprintf("reaction-%s-%d-%d", source, i, time.Now().Unix()%100000)
	drop, err := trialNamespace(ctx, cs, ns)
	if err != nil {
		return 0, err
	}
	defer drop()
	zero := int64(0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "step", Labels: map[string]string{"app": "step"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &zero,
			AutomountServiceAccountToken:  new(bool),
			Containers: []corev1.Container{{
				Name: "app", Image: "tailor.local/loadgen:dev", Args: []string{"--cpu=20m", "--memory=24Mi"},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				},
			}},
		},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	// Warm up: the source has seen the pod idle and tailor recommends (the
	// Prometheus source counts a new container's CPU two rate windows in).
	policy, err := recommending(ctx, c, ns, "step", corev1.ResourceCPU)
	if err != nil {
		return 0, err
	}
	// Settle: the load generator's start-up burst can look like a peak near
	// the limit, and tailor may raise for it. Step only once tailor holds:
	// the pod unchanged for a while and no cpu above its limit recommended.
	p, err := settle(ctx, c, cs, ns, policy)
	if err != nil {
		return 0, err
	}
	quotaFile, err := cgroupFile(p, "cpu.cfs_quota_us")
	if err != nil {
		return 0, err
	}
	before, err := readInt(quotaFile)
	if err != nil {
		return 0, err
	}

	start := time.Now()
	if err := setCPU(ctx, p.Status.PodIP, 1000); err != nil {
		return 0, err
	}
	for time.Since(start) < o.timeout {
		q, err := readInt(quotaFile)
		if err != nil {
			return 0, err
		}
		if q > before {
			return time.Since(start).Seconds(), nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0, fmt.Errorf("cpu quota still %d after %s", before, o.timeout)
}

// trialNamespace creates namespace ns for one trial, and returns what
// deletes it.
func trialNamespace(ctx context.Context, cs *kubernetes.Clientset, ns string) (func(), error) {
	if _, err := cs.CoreV1().Namespaces().Create(ctx, cluster.NewNamespace(ns, nil), metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	drop := func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) }
	if err := cluster.WaitDefaultServiceAccount(ctx, cs, ns); err != nil {
		drop()
		return nil, err
	}
	return drop, nil
}

// recommending creates the policy of pods app=<app> in ns, controlling one
// resource and resizing at most once a second, and waits until it
// recommends.
func recommending(ctx context.Context, c client.Client, ns, app string, r corev1.ResourceName) (*v1alpha1.TailorPolicy, error) {
	policy := &v1alpha1.TailorPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app},
		Spec: v1alpha1.TailorPolicySpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			ResourcePolicy: &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
				ContainerName: "*", ControlledResources: []corev1.ResourceName{r},
			}}},
			Behavior: &v1alpha1.Behavior{MinResizeInterval: &metav1.Duration{Duration: time.Second}},
		},
	}
	if err := c.Create(ctx, policy); err != nil {
		return nil, err
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		var got v1alpha1.TailorPolicy
		if err := c.Get(ctx, client.ObjectKeyFromObject(policy), &got); err != nil {
			// The cache may not have the new policy yet: poll again.
			return false, client.IgnoreNotFound(err)
		}
		return meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionRecommendationProvided), nil
	}); err != nil {
		return nil, fmt.Errorf("no recommendation while idle: %w", err)
	}
	return policy, nil
}

// settleFor is how long the pod must stay unchanged: longer than cAdvisor's
// housekeeping interval and a few syncs, so a pending raise would show.
const settleFor = 20 * time.Second

func settle(ctx context.Context, c client.Client, cs *kubernetes.Clientset, ns string, policy *v1alpha1.TailorPolicy) (*corev1.Pod, error) {
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "step", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		time.Sleep(settleFor)
		after, err := cs.CoreV1().Pods(ns).Get(ctx, "step", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		var got v1alpha1.TailorPolicy
		if err := c.Get(ctx, client.ObjectKeyFromObject(policy), &got); err != nil {
			return nil, err
		}
		limit := after.Spec.Containers[0].Resources.Limits.Cpu()
		holding := got.Status.Recommendation != nil && len(got.Status.Recommendation.ContainerRecommendations) > 0 &&
			got.Status.Recommendation.ContainerRecommendations[0].Target.Cpu().Cmp(*limit) <= 0
		if after.Generation == p.Generation && after.Status.ObservedGeneration == after.Generation && holding {
			return after, nil
		}
	}
	return nil, fmt.Errorf("tailor did not settle on the idle pod within 3m")
}

func setCPU(ctx context.Context, ip string, millicores int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s:8080/cpu?millicores=%d", ip, millicores), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("driving the load generator at %s: %w", ip, err)
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("load generator at %s answered %s", ip, resp.Status)
	}
	return nil
}

// cgroupFile finds a container's cgroup v1 cpu file on this host (the
// kubelet's cgroupfs driver lays it out as kubepods[/qos]/pod<uid>/<id>).
func cgroupFile(p *corev1.Pod, name string) (string, error) {
	if len(p.Status.ContainerStatuses) == 0 {
		return "", fmt.Errorf("pod %s has no container status", p.Name)
	}
	id := p.Status.ContainerStatuses[0].ContainerID
	id = id[strings.Index(id, "://")+3:]
	for _, pattern := range []string{
		filepath.Join("/sys/fs/cgroup/cpu/kubepods", "pod"+string(p.UID), id, name),
		filepath.Join("/sys/fs/cgroup/cpu/kubepods", "*", "pod"+string(p.UID), id, name),
	} {
		if m, _ := filepath.Glob(pattern); len(m) == 1 {
			return m[0], nil
		}
	}
	return "", fmt.Errorf("no cgroup file %s for pod %s", name, p.Name)
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// percentile is the nearest-rank percentile of xs (0 for none).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := int(float64(len(s))*p/100+0.999999) - 1
	return s[min(max(rank, 0), len(s)-1)]
}

// bounds is a source's recorded ranges.
type bounds struct {
	P95Max float64 `json:"p95Max"`
	// OOMKillsMax bounds the memory ramps' kills, where recorded.
	OOMKillsMax *int `json:"oomKillsMax"`
}

// costBounds are the agent's cost goals.
type costBounds struct {
	CoresMax         float64 `json:"coresMax"`
	WorkingSetMiBMax float64 `json:"workingSetMiBMax"`
}

// hpaBounds bound how many more replica changes and reversals (medians)
// the HPA makes with tailor beside it than alone, in the same run.
type hpaBounds struct {
	ExtraChangesMax   float64 `json:"extraChangesMax"`
	ExtraReversalsMax float64 `json:"extraReversalsMax"`
}

// boostBounds bound the median boosted time to Ready over the median plain
// one.
type boostBounds struct {
	RatioMax float64 `json:"ratioMax"`
}

func check(path string, results []result, ramps []rampResult, cost *agentCost, boost *boostResult, hpa *hpaResult, takeover *takeoverResult, apps []appResult) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var ranges map[string]json.RawMessage
	if err := json.Unmarshal(b, &ranges); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var bad []string
	for _, r := range results {
		raw, ok := ranges[r.source]
		if !ok {
			continue
		}
		var rg bounds
		if err := json.Unmarshal(raw, &rg); err != nil {
			return fmt.Errorf("%s: %s: %w", path, r.source, err)
		}
		p95 := percentile(r.seconds, 95)
		if r.failures > 0 || len(r.seconds) == 0 || p95 > rg.P95Max {
			bad = append(bad, fmt.Sprintf("%s p95 %.1fs (bound %.0fs), %d failures", r.source, p95, rg.P95Max, r.failures))
		}
	}
	for _, r := range ramps {
		var rg bounds
		if raw, ok := ranges[r.source]; !ok || json.Unmarshal(raw, &rg) != nil || rg.OOMKillsMax == nil {
			continue
		}
		if r.oomKills > *rg.OOMKillsMax || len(r.seconds) < r.trials {
			bad = append(bad, fmt.Sprintf("%s memory ramp: %d OOM kills (bound %d), %d of %d raised", r.source, r.oomKills, *rg.OOMKillsMax, len(r.seconds), r.trials))
		}
	}
	if raw, ok := ranges["agentCost"]; ok && cost != nil {
		var cb costBounds
		if err := json.Unmarshal(raw, &cb); err != nil {
			return fmt.Errorf("%s: agentCost: %w", path, err)
		}
		if cost.cores > cb.CoresMax || cost.workingSetMiB > cb.WorkingSetMiBMax {
			bad = append(bad, fmt.Sprintf("agent cost %.4f cores, %.1f MiB (bounds %.2f cores, %.0f MiB)", cost.cores, cost.workingSetMiB, cb.CoresMax, cb.WorkingSetMiBMax))
		}
	}
	if raw, ok := ranges["startupBoost"]; ok && boost != nil {
		var bb boostBounds
		if err := json.Unmarshal(raw, &bb); err != nil {
			return fmt.Errorf("%s: startupBoost: %w", path, err)
		}
		if boost.failures > 0 || len(boost.boosted) == 0 || boost.ratio() > bb.RatioMax {
			bad = append(bad, fmt.Sprintf("startup boost: boosted/plain time to Ready %.2f (bound %.2f), %d failures", boost.ratio(), bb.RatioMax, boost.failures))
		}
	}
	if raw, ok := ranges["hpa"]; ok && hpa != nil {
		var hb hpaBounds
		if err := json.Unmarshal(raw, &hb); err != nil {
			return fmt.Errorf("%s: hpa: %w", path, err)
		}
		extraChanges := medianOf(hpa.with, changes) - medianOf(hpa.alone, changes)
		extraReversals := medianOf(hpa.with, reversals) - medianOf(hpa.alone, reversals)
		if hpa.failures > 0 || len(hpa.with) == 0 || extraChanges > hb.ExtraChangesMax || extraReversals > hb.ExtraReversalsMax {
			bad = append(bad, fmt.Sprintf("hpa: with tailor %+.1f replica changes and %+.1f reversals over the HPA alone (bounds %+.1f, %+.1f), %d failures",
				extraChanges, extraReversals, hb.ExtraChangesMax, hb.ExtraReversalsMax, hpa.failures))
		}
	}
	if raw, ok := ranges["takeover"]; ok && takeover != nil {
		var tb map[string]takeoverBounds
		if err := json.Unmarshal(raw, &tb); err != nil {
			return fmt.Errorf("%s: takeover: %w", path, err)
		}
		for _, k := range []struct {
			key, signal string
			runs        []failover
			failures    int
		}{{"crash", "SIGKILL", takeover.crash, takeover.crashFailures}, {"graceful", "SIGTERM", takeover.graceful, takeover.gracefulFailures}} {
			b, ok := tb[k.key]
			if !ok {
				continue
			}
			lease, resize := percentile(seconds(k.runs, leaseTime), 50), percentile(seconds(k.runs, resizeTime), 50)
			if k.failures > 0 || len(k.runs) == 0 || lease > b.LeaseMedianMax || resize > b.ResizeMedianMax {
				bad = append(bad, fmt.Sprintf("takeover after %s: median %.1fs to the lease (bound %.1fs), %.1fs to the first resize (bound %.1fs), %d failures",
					k.signal, lease, b.LeaseMedianMax, resize, b.ResizeMedianMax, k.failures))
			}
		}
	}
	if raw, ok := ranges["apps"]; ok && len(apps) > 0 {
		more, err := checkApps(raw, apps)
		if err != nil {
			return fmt.Errorf("%s: apps: %w", path, err)
		}
		bad = append(bad, more...)
	}
	if len(bad) > 0 {
		return fmt.Errorf("outside the recorded ranges in %s: %s", path, strings.Join(bad, "; "))
	}
	fmt.Printf("all sources within the ranges in %s\n", path)
	return nil
}

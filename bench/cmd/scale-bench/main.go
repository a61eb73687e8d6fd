// Command scale-bench measures the tailor manager at scale (issue #10): a
// real kube-apiserver and etcd, simulated nodes and pods, a simulated
// kubelet fleet serving usage pages (read on each simulated kubelet's own
// port, as the manager reads kubelets by default, or through the
// apiserver's node proxy with the source kubelet-proxy) and answering
// resizes, and the manager as a separate process. It prints a
// table of figures per size, writes them as JSON and checks them against
// recorded ranges.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/shard"
)

type size struct {
	Pods, Nodes, Policies int
	// Shards is how many managers split the namespaces (--shards); 0 and
	// 1 are one manager.
	Shards int
	// MemoryLimit, if not empty, runs each manager in a memory cgroup with
	// this limit (as --memory-limit does for every size).
	MemoryLimit string
}

func (s size) String() string {
	out := fmt.Sprintf("%dx%dx%d", s.Pods, s.Nodes, s.Policies)
	if s.Shards > 1 {
		out += fmt.Sprintf("/%d", s.Shards)
	}
	if s.MemoryLimit != "" {
		out += "@" + s.MemoryLimit
	}
	return out
}

// The CI size runs in a few minutes; the full sizes run on demand, the
// largest also split over two managers, with no memory limit and with the
// 150Mi the goal allows each (their pages charged to it, as in a pod).
var (
	ciSizes   = []size{{1000, 50, 10, 1, ""}}
	fullSizes = []size{{1000, 50, 10, 1, ""}, {2000, 100, 100, 1, ""}, {5000, 250, 500, 1, ""}, {10000, 500, 1000, 1, ""},
		{10000, 500, 1000, 2, ""}, {10000, 500, 1000, 2, "150Mi"}}
)

func parseSizes(s string) ([]size, error) {
	var out []size
	for _, f := range strings.Split(s, ",") {
		spec, limit, limited := strings.Cut(strings.TrimSpace(f), "@")
		if limited {
			if q, err := resource.ParseQuantity(limit); err != nil || q.Value() <= 0 {
				return nil, fmt.Errorf("size %q: memory limit %q is not a positive quantity, e.g. 150Mi", f, limit)
			}
		}
		dims, shards, sharded := strings.Cut(spec, "/")
		parts := strings.Split(dims, "x")
		if len(parts) != 3 {
			return nil, fmt.Errorf("size %q: want PODSxNODESxPOLICIES[/SHARDS], e.g. 1000x50x20 or 10000x500x1000/2", f)
		}
		n := 1
		if sharded {
			v, err := strconv.Atoi(shards)
			if err != nil || v <= 0 || v > shard.MaxCount {
				return nil, fmt.Errorf("size %q: %q is not a shard count from 1 to %d", f, shards, shard.MaxCount)
			}
			n = v
		}
		var d [3]int
		for i, p := range parts {
			v, err := strconv.Atoi(p)
			if err != nil || v <= 0 {
				return nil, fmt.Errorf("size %q: %q is not a positive number", f, p)
			}
			d[i] = v
		}
		out = append(out, size{d[0], d[1], d[2], n, limit})
	}
	return out, nil
}

type options struct {
	repo, tailor, traces, out, ranges, nodeIP string
	// vpaBin holds VPA's vpa-recommender and vpa-updater, and vpaCRDs its
	// CRDs' manifest, for the run with source "vpa".
	vpaBin, vpaCRDs string
	syncPeriod      time.Duration
	syncs           int
	keep            bool
	managerFlags    []string
	// memoryLimit: run the manager in a memory cgroup with this limit, as
	// a container's limits.memory; 0: no limit.
	memoryLimit int64
}

func main() {
	var o options
	scale := flag.String("scale", "ci", "ci (1k pods, 50 nodes, 10 policies, kubelet source: a few minutes) or full (every size up to 10k pods with the kubelet source, the smallest also with metrics-server and Prometheus)")
	sizesFlag := flag.String("sizes", "", "sizes to run instead, as PODSxNODESxPOLICIES[/SHARDS][@LIMIT][,...] (SHARDS managers split the namespaces, each with --shards and its --shard-index, under leader election; LIMIT runs each in a memory cgroup, as --memory-limit)")
	sourcesFlag := flag.String("sources", "", "metrics sources instead of the scale's (kubelet,metrics-server,prometheus; kubelet-proxy is the kubelet source read through the apiserver's node proxy, --kubelet-via-apiserver-proxy; vpa runs VPA 1.8's recommender and updater instead of tailor, on metrics.k8s.io, with --vpa-bin and --vpa-crds)")
	flag.StringVar(&o.repo, "repo", "..", "the tailor repository (for the CRDs)")
	flag.StringVar(&o.tailor, "tailor", "../bin/tailor", "the tailor binary")
	flag.StringVar(&o.traces, "traces", "../../shared/traces/bitbrains-rnd/2013-7", "Bitbrains month the usage shapes come from")
	flag.StringVar(&o.out, "out", "out", "directory for scale.json and scale.svg")
	flag.StringVar(&o.ranges, "ranges", "scale-ranges.json", "recorded ranges to check; empty skips the check")
	flag.StringVar(&o.vpaBin, "vpa-bin", "", "the directory of VPA's vpa-recommender and vpa-updater, for the source vpa (hack/addons/vpa.sh build makes them)")
	flag.StringVar(&o.vpaCRDs, "vpa-crds", "", "VPA's CRDs (its deploy/vpa-v1-crd-gen.yaml), for the source vpa")
	flag.StringVar(&o.nodeIP, "node-ip", "", "the address the simulated kubelets listen on (default: the host's first non-loopback IPv4; the apiserver does not proxy to loopback)")
	flag.DurationVar(&o.syncPeriod, "sync-period", 10*time.Second, "the manager's --sync-period (10s is its default)")
	flag.IntVar(&o.syncs, "syncs", 6, "sync periods measured per run")
	flag.BoolVar(&o.keep, "keep", false, "keep each run's work directory (manager log) under out/")
	managerFlags := flag.String("manager-flags", "", "more flags for tailor manager, space-separated")
	chartOnly := flag.String("chart", "", "only draw the growth chart from this JSON report into out/scale.svg")
	memLimit := flag.String("memory-limit", "", "run the manager in a memory cgroup with this limit (e.g. 200Mi), as a pod with limits.memory runs: the kernel enforces it and the manager sets GOMEMLIMIT from it (needs root)")
	flag.Parse()

	if *memLimit != "" {
		q, err := resource.ParseQuantity(*memLimit)
		if err != nil || q.Value() <= 0 {
			fatal(fmt.Errorf("--memory-limit %q: a positive quantity, e.g. 200Mi", *memLimit))
		}
		o.memoryLimit = q.Value()
	}

	o.managerFlags = strings.Fields(*managerFlags)
	if *chartOnly != "" {
		if err := chartFromFile(*chartOnly, filepath.Join(o.out, "scale.svg")); err != nil {
			fatal(err)
		}
		return
	}
	sizes := ciSizes
	sources := map[string][]string{}
	switch *scale {
	case "ci":
		sources[ciSizes[0].String()] = []string{"kubelet"}
	case "full":
		sizes = fullSizes
		for _, s := range fullSizes {
			sources[s.String()] = []string{"kubelet"}
		}
		sources[fullSizes[0].String()] = []string{"kubelet", "metrics-server", "prometheus"}
	default:
		fatal(fmt.Errorf("--scale %q: use ci or full", *scale))
	}
	if *sizesFlag != "" {
		var err error
		if sizes, err = parseSizes(*sizesFlag); err != nil {
			fatal(err)
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	shapes, kinds, err := loadShapes(o.traces, 120, 20)
	if err != nil {
		fatal(err)
	}
	if o.nodeIP == "" {
		if o.nodeIP, err = hostIP(); err != nil {
			fatal(err)
		}
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		fatal(err)
	}
	mach := machine()
	fmt.Printf("machine: %s\n", mach)
	fmt.Printf("usage shapes: %d Bitbrains series (%d steady, %d diurnal, %d batch spikes), one 5-minute sample per %s\n",
		len(shapes), kinds[kindSteady], kinds[kindDiurnal], kinds[kindSpiky], segment)

	var results []*result
	for _, s := range sizes {
		srcs := sources[s.String()]
		if *sourcesFlag != "" {
			srcs = strings.Split(*sourcesFlag, ",")
		} else if len(srcs) == 0 {
			srcs = []string{"kubelet"}
		}
		for _, src := range srcs {
			fmt.Printf("\n=== %d pods, %d nodes, %d policies, source %s\n", s.Pods, s.Nodes, s.Policies, src)
			res, err := runOne(ctx, o, s, src, shapes)
			if err != nil {
				fatal(fmt.Errorf("run %s %s: %w", s, src, err))
			}
			res.Machine = mach
			results = append(results, res)
			printTable(os.Stdout, results[len(results)-1:])
		}
	}
	fmt.Printf("\nmachine: %s\n", mach)
	printTable(os.Stdout, results)
	printRequests(os.Stdout, results)
	path := filepath.Join(o.out, "scale.json")
	if err := writeJSON(path, results); err != nil {
		fatal(err)
	}
	fmt.Printf("wrote %s\n", path)
	if len(results) > 1 {
		svg := filepath.Join(o.out, "scale.svg")
		if err := chartFromFile(path, svg); err != nil {
			fatal(err)
		}
		fmt.Printf("wrote %s\n", svg)
	}
	if o.ranges == "" {
		return
	}
	spec, err := loadRanges(o.ranges)
	if err != nil {
		fatal(err)
	}
	if errs := spec.check(results); len(errs) > 0 {
		fmt.Fprintf(os.Stderr, "\nfigures out of their recorded range (%s):\n", o.ranges)
		for _, e := range errs {
			fmt.Fprintf(os.Stderr, "  %s\n", e)
		}
		os.Exit(1)
	}
	fmt.Printf("all figures within the ranges in %s\n", o.ranges)
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "scale-bench: %v\n", err)
	os.Exit(1)
}

// result is one run's figures. Per-sync figures are counts over the
// measured window divided by the sync periods in it.
type result struct {
	Pods     int    `json:"pods"`
	Nodes    int    `json:"nodes"`
	Policies int    `json:"policies"`
	Source   string `json:"source"`
	// Shards is how many managers split the namespaces, each under its
	// own lease; 1 is one manager. With several, the memory, heap and full
	// pass figures are the largest manager's (the goals are per manager),
	// CPU, reconciles and resizes the sum, and Managers has each one's.
	Shards   int              `json:"shards"`
	Managers []managerFigures `json:"managers,omitempty"`
	// RSSPeakBytes is the manager's peak resident memory (VmHWM) over the
	// whole run, start included; RSSSteadyBytes its mean over the window.
	RSSPeakBytes   int64 `json:"rssPeakBytes"`
	RSSSteadyBytes int64 `json:"rssSteadyBytes"`
	// RSSFileSteadyBytes is the part of RSSSteadyBytes that maps files:
	// the binary's pages, shared with the page cache and reclaimable.
	RSSFileSteadyBytes int64 `json:"rssFileSteadyBytes"`
	// HeapPeakBytes and HeapSteadyBytes: go_memstats_heap_alloc_bytes,
	// the most and the mean seen over the window.
	HeapPeakBytes   int64 `json:"heapPeakBytes"`
	HeapSteadyBytes int64 `json:"heapSteadyBytes"`
	// CPUSecondsPerSync is the managers' CPU time per sync period; it is
	// printed, not checked: on a shared VM the same build measured 1.1 to
	// 3.9 s/sync on different hours of one day.
	CPUSecondsPerSync float64 `json:"cpuSecondsPerSync"`
	// APIServerCPUSecondsPerSync is the kube-apiserver's CPU time over the
	// same window (process_cpu_seconds_total), and CPUPerAPIServerCPU the
	// managers' over it: what is checked. Both processes run on the same
	// cores in the same seconds, so a slower machine slows both, while a
	// manager that spends more CPU on the same traffic moves the ratio
	// (more traffic shows in APIRequestsPerSync).
	APIServerCPUSecondsPerSync float64 `json:"apiserverCPUSecondsPerSync"`
	CPUPerAPIServerCPU         float64 `json:"cpuPerAPIServerCPU"`
	// FirstPassSeconds: from the manager's start to every policy's status
	// written once (cache fill, checkpoint reads and one sync each).
	FirstPassSeconds float64 `json:"firstPassSeconds"`
	// FullPassSeconds: the reconciler's busy time per sync period (the sum
	// of controller_runtime_reconcile_time_seconds over the window, over
	// the periods and the workers): the time one pass over every policy
	// and so every pod takes. At or above the sync period, the manager
	// cannot keep up.
	FullPassSeconds   float64 `json:"fullPassSeconds"`
	Workers           int     `json:"workers"`
	SyncPeriodSeconds float64 `json:"syncPeriodSeconds"`
	ReconcilesPerSync float64 `json:"reconcilesPerSync"`
	// APIRequestsPerSync: the apiserver's apiserver_request_total over the
	// window, without the simulated kubelets' own requests (PUT
	// pods/status, and their GET pods before it); by verb and resource in
	// APIRequestsByVerbResource.
	APIRequestsPerSync        float64            `json:"apiRequestsPerSync"`
	APIRequestsByVerbResource map[string]float64 `json:"apiRequestsByVerbResource"`
	// ScrapesPerSync: kubelet pages the manager read per sync, counted
	// where the simulated kubelets serve them (two per node read with the
	// cAdvisor page), however they were reached: directly (source kubelet)
	// or through the apiserver (kubelet-proxy). 0 for the other sources,
	// whose reads of the fleet are not the manager's.
	ScrapesPerSync float64 `json:"scrapesPerSync"`
	// ProxiedPagesPerSync: the kubelet pages the apiserver proxied per
	// sync (CONNECT or GET nodes/proxy, as it counts them): the same as
	// ScrapesPerSync with kubelet-proxy, 0 with the direct reads.
	ProxiedPagesPerSync float64 `json:"proxiedPagesPerSync"`
	// FleetPagesPerSync: metrics pages the simulated kubelets served per
	// sync, whoever asked (the proxy, metrics-server, Prometheus).
	FleetPagesPerSync   float64 `json:"fleetPagesPerSync"`
	StatusWritesPerSync float64 `json:"statusWritesPerSync"`
	// StatusChangesPerSync: of the status writes seen by a watch, how
	// many changed each part (recommendation, pods, each condition).
	StatusChangesPerSync map[string]float64 `json:"statusChangesPerSync"`
	ResizesSentPerSync   float64            `json:"resizesSentPerSync"`
	// StepPods pods (1%) had their CPU usage stepped to 97% of their
	// limit; StepResized of them were resized within the wait.
	StepPods                int            `json:"stepPods"`
	StepResized             int            `json:"stepResized"`
	StepToResizeP50Seconds  float64        `json:"stepToResizeP50Seconds"`
	StepToResizeMaxSeconds  float64        `json:"stepToResizeMaxSeconds"`
	SetupSeconds            float64        `json:"setupSeconds"`
	SimulatedKubeletAnswers map[string]int `json:"simulatedKubeletAnswers"`
	// MemoryLimitBytes is the limit of the memory cgroup the manager ran
	// in (--memory-limit; 0: none), CgroupPeakBytes the cgroup's peak use
	// (page cache included) and OOMKills the kernel's kills in it.
	MemoryLimitBytes int64 `json:"memoryLimitBytes,omitempty"`
	CgroupPeakBytes  int64 `json:"cgroupPeakBytes,omitempty"`
	OOMKills         int64 `json:"oomKills"`
	// MajorFaultsPerSync: the managers' page faults that read from disk,
	// per sync over the window; more than a few mean their pages do not
	// fit beside their heap under the memory limit.
	MajorFaultsPerSync float64 `json:"majorFaultsPerSync"`
	Machine            string  `json:"machine"`
}

// managerFigures are one shard's manager's own figures, and what it owns.
type managerFigures struct {
	Shard int `json:"shard"`
	// Component names one of VPA's components, in its run.
	Component          string  `json:"component,omitempty"`
	Namespaces         int     `json:"namespaces"`
	Policies           int     `json:"policies"`
	Pods               int     `json:"pods"`
	RSSPeakBytes       int64   `json:"rssPeakBytes"`
	RSSSteadyBytes     int64   `json:"rssSteadyBytes"`
	HeapSteadyBytes    int64   `json:"heapSteadyBytes"`
	CPUSecondsPerSync  float64 `json:"cpuSecondsPerSync"`
	FullPassSeconds    float64 `json:"fullPassSeconds"`
	ReconcilesPerSync  float64 `json:"reconcilesPerSync"`
	MajorFaultsPerSync float64 `json:"majorFaultsPerSync"`
	CgroupPeakBytes    int64   `json:"cgroupPeakBytes,omitempty"`
	OOMKills           int64   `json:"oomKills,omitempty"`
}

// owned counts what each of shards owns of l: namespaces, policies, pods.
func owned(l layout, shards int) []managerFigures {
	out := make([]managerFigures, shards)
	for i := range out {
		out[i].Shard = i
	}
	for ns := range min(l.namespaces, l.Policies) {
		out[shard.Of(l.namespace(ns), shards)].Namespaces++
	}
	for pol := range l.Policies {
		out[shard.Of(l.namespace(pol), shards)].Policies++
	}
	for pod := range l.Pods {
		out[shard.Of(l.namespace(pod%l.Policies), shards)].Pods++
	}
	return out
}

func runOne(parent context.Context, o options, s size, source string, shapes []*shape) (res *result, err error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	work, err := os.MkdirTemp("", "scale-bench-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if o.keep {
			dst := filepath.Join(o.out, fmt.Sprintf("run-%s-%s", strings.NewReplacer("/", "-shards-", "@", "-limit-").Replace(s.String()), source))
			_ = os.RemoveAll(dst)
			_ = os.Rename(work, dst)
			return
		}
		_ = os.RemoveAll(work)
	}()
	shards := max(1, s.Shards)
	res = &result{Pods: s.Pods, Nodes: s.Nodes, Policies: s.Policies, Source: source, Shards: shards, SyncPeriodSeconds: o.syncPeriod.Seconds()}
	setupStart := time.Now()
	repo, err := filepath.Abs(o.repo)
	if err != nil {
		return nil, err
	}
	var crds []string
	if source == "vpa" {
		if o.vpaBin == "" || o.vpaCRDs == "" {
			return nil, fmt.Errorf("the source vpa needs --vpa-bin and --vpa-crds (make bench-scale passes them)")
		}
		crds = append(crds, o.vpaCRDs)
	}
	cl, err := startCluster(repo, work, crds...)
	if err != nil {
		return nil, err
	}
	defer func() {
		// The resizer's watch ends first, or the apiserver waits for it.
		cancel()
		if e := cl.stop(); e != nil {
			fmt.Printf("stopping the apiserver: %v\n", e)
		}
	}()
	f, err := newFleet(o.nodeIP, s.Nodes, benchStart, work)
	if err != nil {
		return nil, err
	}
	defer f.stop()
	l := layout{size: s, namespaces: max(1, (s.Policies+19)/20), owned: source == "vpa"}
	pods, err := cl.populate(ctx, l, f, shapes)
	if err != nil {
		return nil, err
	}
	populated := time.Now()
	rz := newResizer(cl.cs, pods)
	if err := rz.run(ctx); err != nil {
		return nil, err
	}
	extra := append([]string(nil), o.managerFlags...)
	mgrSource := source
	switch source {
	case "kubelet":
		// Each simulated kubelet read on its own port, as by default,
		// its certificate verified against the fleet's CA.
		extra = append(extra, "--kubelet-ca-file", f.caFile)
	case "kubelet-proxy":
		mgrSource = "kubelet"
		extra = append(extra, "--kubelet-via-apiserver-proxy")
	case "metrics-server":
		ms, err := startMetricsAPI(ctx, cl, f)
		if err != nil {
			return nil, err
		}
		defer ms.stop()
	case "vpa":
		ms, err := startMetricsAPI(ctx, cl, f)
		if err != nil {
			return nil, err
		}
		defer ms.stop()
		if err := cl.createVPAs(ctx, l); err != nil {
			return nil, err
		}
		res.SetupSeconds = time.Since(setupStart).Seconds()
		fmt.Printf("setup: %d nodes, %d pods, %d VPAs in %.0fs\n", s.Nodes, s.Pods, s.Policies, res.SetupSeconds)
		if err := runVPA(ctx, o, cl, rz, s, work, res); err != nil {
			return nil, err
		}
		res.SimulatedKubeletAnswers = rz.resultCounts()
		return res, nil
	case "prometheus":
		prom, err := startPrometheus(ctx, f, work)
		if err != nil {
			return nil, err
		}
		defer prom.stop()
		extra = append(extra, "--prometheus-url", prom.url)
	default:
		return nil, fmt.Errorf("unknown source %q", source)
	}
	res.SetupSeconds = time.Since(setupStart).Seconds()
	fmt.Printf("setup: %d nodes, %d pods, %d policies in %.0fs\n", s.Nodes, s.Pods, s.Policies, res.SetupSeconds)

	tailor, err := filepath.Abs(o.tailor)
	if err != nil {
		return nil, err
	}
	memoryLimit := o.memoryLimit
	if s.MemoryLimit != "" {
		q := resource.MustParse(s.MemoryLimit)
		memoryLimit = q.Value()
	}
	if memoryLimit > 0 {
		res.MemoryLimitBytes = memoryLimit
		uncached := filepath.Join(work, "tailor")
		if err := uncachedCopy(tailor, uncached); err != nil {
			return nil, err
		}
		defer func() { _ = os.Remove(uncached) }()
		tailor = uncached
	}
	figs := owned(l, shards)
	mgrs := make([]*managerProc, shards)
	for i := range mgrs {
		var cg *memCgroup
		if memoryLimit > 0 {
			if cg, err = newMemCgroup(fmt.Sprintf("tailor-scale-bench-%d-%d", os.Getpid(), i), memoryLimit); err != nil {
				return nil, err
			}
			defer cg.remove()
		}
		flags := extra
		logName := "manager.log"
		if shards > 1 {
			// Each shard under its own lease, as installed; the later
			// --leader-elect wins over startManager's.
			flags = append(slices.Clone(extra), "--shards", strconv.Itoa(shards), "--shard-index", strconv.Itoa(i),
				"--leader-elect=true", "--leader-election-namespace", "default")
			logName = fmt.Sprintf("manager-%d.log", i)
			fmt.Printf("shard %d: %d namespaces, %d policies, %d pods\n", i, figs[i].Namespaces, figs[i].Policies, figs[i].Pods)
		}
		if mgrs[i], err = startManager(tailor, cl.kubeconfig, mgrSource, filepath.Join(work, logName), o.syncPeriod, flags, cg); err != nil {
			return nil, err
		}
		mgrs[i].cg = cg
		defer mgrs[i].stop()
	}
	started := time.Now()
	if err := waitFirstPass(ctx, cl, s.Policies, 10*time.Minute); err != nil {
		return nil, fmt.Errorf("%w (manager logs in %s)", err, work)
	}
	res.FirstPassSeconds = time.Since(started).Seconds()
	fmt.Printf("first pass: every policy's status written %.1fs after the manager started\n", res.FirstPassSeconds)
	// The first resizes settle (fewer than 2% of the pods resized in a
	// sync period, at most 6 periods: the traces' peaks keep raising some
	// pods), then the window.
	if source == "prometheus" {
		// The Prometheus source holds a container's CPU until its series
		// is two rate windows (2m) past the container's start, when rate()
		// stops reading low; the window must not fall in that warm-up.
		if err := sleep(ctx, time.Until(populated.Add(2*time.Minute+2*o.syncPeriod))); err != nil {
			return nil, err
		}
	}
	settled, err := settle(ctx, rz, s, o.syncPeriod)
	if err != nil {
		return nil, err
	}
	fmt.Printf("settled after %.0fs\n", settled.Seconds())
	sw, err := watchStatus(ctx, cl.wc)
	if err != nil {
		return nil, err
	}
	sw.window(true)
	// With --keep, the window's CPU profile of each manager is kept beside
	// its log: where a sync's CPU goes is what a change of its cost asks.
	var profiles sync.WaitGroup
	if o.keep {
		for i, m := range mgrs {
			name := "cpu.pprof"
			if shards > 1 {
				name = fmt.Sprintf("cpu-%d.pprof", i)
			}
			profiles.Add(1)
			go func() {
				defer profiles.Done()
				if err := m.saveCPUProfile(ctx, filepath.Join(work, name), time.Duration(o.syncs)*o.syncPeriod); err != nil {
					fmt.Printf("no CPU profile: %v\n", err)
				}
			}()
		}
	}
	err = measureWindow(ctx, o, cl, mgrs, f, res, figs)
	profiles.Wait()
	if err != nil {
		return nil, err
	}
	for i, m := range mgrs {
		name := "heap.pprof"
		if shards > 1 {
			name = fmt.Sprintf("heap-%d.pprof", i)
		}
		if err := m.saveHeapProfile(ctx, filepath.Join(work, name)); err != nil {
			fmt.Printf("no heap profile: %v\n", err)
		}
	}
	changes, _ := sw.window(false)
	res.StatusChangesPerSync = map[string]float64{}
	for k, v := range changes {
		res.StatusChangesPerSync[k] = round2(float64(v) / float64(o.syncs))
	}
	if err := measureStep(ctx, o, pods, rz, s, res); err != nil {
		return nil, err
	}
	for i, m := range mgrs {
		st, err := m.stats()
		if err != nil {
			return nil, err
		}
		figs[i].RSSPeakBytes = st.hwm
		res.RSSPeakBytes = max(res.RSSPeakBytes, st.hwm)
		if m.cg != nil {
			figs[i].CgroupPeakBytes, figs[i].OOMKills = m.cg.stats()
			res.CgroupPeakBytes = max(res.CgroupPeakBytes, figs[i].CgroupPeakBytes)
			res.OOMKills += figs[i].OOMKills
		}
	}
	if memoryLimit > 0 {
		fmt.Printf("memory limit %s MiB: the cgroup's peak use %s MiB (page cache included), %d OOM kills, %.1f major faults per sync\n",
			mib(memoryLimit), mib(res.CgroupPeakBytes), res.OOMKills, res.MajorFaultsPerSync)
	}
	fmt.Printf("RSS steady %s MiB: %s MiB the process's own, %s MiB the binary's pages\n",
		mib(res.RSSSteadyBytes), mib(res.RSSSteadyBytes-res.RSSFileSteadyBytes), mib(res.RSSFileSteadyBytes))
	if shards > 1 {
		res.Managers = figs
		for _, m := range figs {
			fmt.Printf("shard %d (%d namespaces, %d policies, %d pods): RSS peak %s MiB, steady %s MiB, heap %s MiB, CPU %.2f s/sync, full pass %.2fs, %.1f reconciles/sync, %.1f major faults/sync\n",
				m.Shard, m.Namespaces, m.Policies, m.Pods, mib(m.RSSPeakBytes), mib(m.RSSSteadyBytes), mib(m.HeapSteadyBytes), m.CPUSecondsPerSync, m.FullPassSeconds, m.ReconcilesPerSync, m.MajorFaultsPerSync)
		}
	}
	res.SimulatedKubeletAnswers = rz.resultCounts()
	return res, nil
}

// settle waits out the first wave of raises: until a sync period after it
// resizes fewer than 2% of the pods, at most 6 periods. A quiet period
// counts only once the wave has begun: a first period with few resizes is
// the manager still reading the fleet's first usage, and a run that took it
// for settled measured the wave itself (140 resizes, 274 reconciles and 153
// status writes a sync, against 38, 92 and 52 in runs of the same build
// that waited).
func settle(ctx context.Context, rz *resizer, s size, period time.Duration) (time.Duration, error) {
	start := time.Now()
	wave := false
	for i := 0; i < 6; i++ {
		before := rz.bumps.Load()
		if err := sleep(ctx, period); err != nil {
			return 0, err
		}
		quiet := rz.bumps.Load()-before < int64(max(1, s.Pods/50))
		if quiet && wave {
			break
		}
		wave = wave || !quiet
	}
	return time.Since(start), nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// waitFirstPass waits until every policy has a status for its generation.
func waitFirstPass(ctx context.Context, cl *cluster, policies int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var list v1alpha1.TailorPolicyList
		if err := cl.c.List(ctx, &list); err != nil {
			return err
		}
		done := 0
		for _, p := range list.Items {
			if p.Status.ObservedGeneration == p.Generation && len(p.Status.Conditions) > 0 {
				done++
			}
		}
		if done == policies {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s only %d of %d policies have a status", timeout, done, policies)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

// measureWindow runs o.syncs sync periods and turns the counters' growth
// over them into per-sync figures: each manager's into figs, and the run's
// into res (memory, heap and full pass the largest manager's, the counts
// the sum).
func measureWindow(ctx context.Context, o options, cl *cluster, mgrs []*managerProc, f *fleet, res *result, figs []managerFigures) error {
	apiBefore, err := scrapeAPIServer(ctx, cl.cs)
	if err != nil {
		return err
	}
	mBefore := make([]metricSet, len(mgrs))
	pBefore := make([]procStats, len(mgrs))
	for i, m := range mgrs {
		if mBefore[i], err = m.scrape(ctx); err != nil {
			return err
		}
		if pBefore[i], err = m.stats(); err != nil {
			return err
		}
	}
	pagesBefore := f.resource.Load() + f.cadvisor.Load()
	start := time.Now()
	end := start.Add(time.Duration(o.syncs) * o.syncPeriod)
	rssSum := make([]float64, len(mgrs))
	fileSum := make([]float64, len(mgrs))
	heapSum := make([]float64, len(mgrs))
	var n int
	for time.Now().Before(end) {
		if err := sleep(ctx, 2*time.Second); err != nil {
			return err
		}
		for i, m := range mgrs {
			st, err := m.stats()
			if err != nil {
				return fmt.Errorf("manager gone: %w", err)
			}
			ms, err := m.scrape(ctx)
			if err != nil {
				return err
			}
			heap := ms.sum("go_memstats_heap_alloc_bytes", nil)
			rssSum[i] += float64(st.rss)
			fileSum[i] += float64(st.rssFile)
			heapSum[i] += heap
			res.HeapPeakBytes = max(res.HeapPeakBytes, int64(heap))
		}
		n++
	}
	elapsed := time.Since(start)
	apiAfter, err := scrapeAPIServer(ctx, cl.cs)
	if err != nil {
		return err
	}
	syncs := elapsed.Seconds() / o.syncPeriod.Seconds()
	ctrl := map[string]string{"controller": "tailorpolicy"}
	sent := map[string]string{"result": "sent"}
	for i, m := range mgrs {
		mAfter, err := m.scrape(ctx)
		if err != nil {
			return err
		}
		pAfter, err := m.stats()
		if err != nil {
			return err
		}
		fig := &figs[i]
		fig.RSSSteadyBytes = int64(rssSum[i] / float64(n))
		fig.HeapSteadyBytes = int64(heapSum[i] / float64(n))
		fig.CPUSecondsPerSync = round2((pAfter.cpu - pBefore[i].cpu) / syncs)
		workers := max(1, mAfter.sum("controller_runtime_max_concurrent_reconciles", ctrl))
		res.Workers = int(workers)
		fig.FullPassSeconds = round2((mAfter.sum("controller_runtime_reconcile_time_seconds", ctrl) - mBefore[i].sum("controller_runtime_reconcile_time_seconds", ctrl)) / syncs / workers)
		fig.ReconcilesPerSync = round2((mAfter.sum("controller_runtime_reconcile_total", ctrl) - mBefore[i].sum("controller_runtime_reconcile_total", ctrl)) / syncs)
		fig.MajorFaultsPerSync = round2(float64(pAfter.majorFaults-pBefore[i].majorFaults) / syncs)
		res.MajorFaultsPerSync += fig.MajorFaultsPerSync
		if fig.RSSSteadyBytes > res.RSSSteadyBytes {
			res.RSSSteadyBytes = fig.RSSSteadyBytes
			res.RSSFileSteadyBytes = int64(fileSum[i] / float64(n))
		}
		res.HeapSteadyBytes = max(res.HeapSteadyBytes, fig.HeapSteadyBytes)
		res.FullPassSeconds = max(res.FullPassSeconds, fig.FullPassSeconds)
		res.CPUSecondsPerSync += (pAfter.cpu - pBefore[i].cpu) / syncs
		res.ReconcilesPerSync += fig.ReconcilesPerSync
		res.ResizesSentPerSync += (mAfter.sum("tailor_resizes_total", sent) - mBefore[i].sum("tailor_resizes_total", sent)) / syncs
	}
	res.FleetPagesPerSync = round2(float64(f.resource.Load()+f.cadvisor.Load()-pagesBefore) / syncs)
	apiCPU := apiAfter.sum("process_cpu_seconds_total", nil) - apiBefore.sum("process_cpu_seconds_total", nil)
	if apiCPU <= 0 {
		return fmt.Errorf("the apiserver's process_cpu_seconds_total did not move over the window (%.2fs): no reference for the managers' CPU", apiCPU)
	}
	res.APIServerCPUSecondsPerSync = round2(apiCPU / syncs)
	res.CPUPerAPIServerCPU = round2(res.CPUSecondsPerSync * syncs / apiCPU)
	before, after := apiBefore.requests(), apiAfter.requests()
	res.APIRequestsByVerbResource = map[string]float64{}
	for k, v := range after {
		d := (v - before[k]) / syncs
		if d <= 0 || simulatedKubelets[k] {
			continue
		}
		res.APIRequestsByVerbResource[k] = round2(d)
		res.APIRequestsPerSync += d
	}
	res.APIRequestsPerSync = round2(res.APIRequestsPerSync)
	res.ProxiedPagesPerSync = round2(res.APIRequestsByVerbResource["CONNECT nodes/proxy"] + res.APIRequestsByVerbResource["GET nodes/proxy"])
	if res.Source == "kubelet" || res.Source == "kubelet-proxy" {
		// The manager is the fleet's only reader in these runs.
		res.ScrapesPerSync = round2(res.FleetPagesPerSync)
	}
	res.StatusWritesPerSync = round2(res.APIRequestsByVerbResource["PATCH tailorpolicies/status"] + res.APIRequestsByVerbResource["PUT tailorpolicies/status"])
	return nil
}

// simulatedKubelets are the requests only the simulated kubelets make in
// the window: the manager never reads single pods from the apiserver (its
// cache serves it) nor writes pod status.
var simulatedKubelets = map[string]bool{"PUT pods/status": true, "GET pods": true}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// measureStep steps the CPU usage of 1% of the pods (one per policy, over
// as many policies as that takes) to 97% of their limit and times until
// each one's resize is sent (its generation moves).
func measureStep(ctx context.Context, o options, pods []*simPod, rz *resizer, s size, res *result) error {
	want := max(1, s.Pods/100)
	var chosen []*simPod
	byPolicy := map[int][]*simPod{}
	for i, p := range pods {
		byPolicy[i%s.Policies] = append(byPolicy[i%s.Policies], p)
	}
	for k := 0; len(chosen) < want && k < 4*want; k++ {
		pol := (k * s.Policies / want) % s.Policies
		if k >= want {
			pol = (k*7 + 3) % s.Policies
		}
		for _, p := range byPolicy[pol] {
			key := p.ns + "/" + p.name
			// Not resized within the policies' minResizeInterval (1m), which
			// would hold the step's raise for the rest of it.
			if !rz.inFlight(key) && time.Since(rz.bumpedAt(key)) > 70*time.Second && !containsPod(chosen, p) {
				chosen = append(chosen, p)
				break
			}
		}
	}
	at := time.Now()
	gens := map[*simPod]int64{}
	for _, p := range chosen {
		gens[p] = rz.generation(p.ns + "/" + p.name)
		p.step(at, 0.97*p.limit())
	}
	res.StepPods = len(chosen)
	// The check is that every stepped pod is resized; how soon is a figure
	// (p50 25-54s, at most 67s, in recorded runs, slower on a loaded
	// machine). The wait only ends a run where something is broken, so it
	// is long: a run that works leaves it as soon as the last pod is
	// resized.
	deadline := at.Add(15 * o.syncPeriod)
	var took []float64
	for time.Now().Before(deadline) {
		took = took[:0]
		for _, p := range chosen {
			key := p.ns + "/" + p.name
			if rz.generation(key) > gens[p] {
				took = append(took, rz.bumpedAt(key).Sub(at).Seconds())
			}
		}
		if len(took) == len(chosen) {
			break
		}
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
	res.StepResized = len(took)
	res.StepToResizeP50Seconds = round2(percentile(took, 0.5))
	res.StepToResizeMaxSeconds = round2(percentile(took, 1))
	return nil
}

func containsPod(ps []*simPod, p *simPod) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// limitName writes a memory limit in MiB, as sizes name it; 0 is none.
func limitName(b int64) string {
	if b == 0 {
		return ""
	}
	return mib(b) + "Mi"
}

func mib(b int64) string { return fmt.Sprintf("%.0f", float64(b)/(1<<20)) }

func printTable(w *os.File, rs []*result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "pods\tnodes\tpolicies\tshards\tlimit MiB\tsource\tRSS peak MiB\tRSS steady MiB\theap MiB\tCPU s/sync\tapiserver CPU s/sync\tCPU/apiserver\tfirst pass s\tfull pass s\tsync s\treconciles/sync\tAPI req/sync\tscrapes/sync\tproxied/sync\tstatus writes/sync\tresizes/sync\tstep->resize p50/max s\t")
	for _, r := range rs {
		limit := "-"
		if r.MemoryLimitBytes > 0 {
			limit = mib(r.MemoryLimitBytes)
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.2f\t%.1f\t%.2f\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f/%.1f (%d/%d)\t\n",
			r.Pods, r.Nodes, r.Policies, max(1, r.Shards), limit, r.Source, mib(r.RSSPeakBytes), mib(r.RSSSteadyBytes), mib(r.HeapSteadyBytes),
			r.CPUSecondsPerSync, r.APIServerCPUSecondsPerSync, r.CPUPerAPIServerCPU, r.FirstPassSeconds, r.FullPassSeconds, r.SyncPeriodSeconds, r.ReconcilesPerSync,
			r.APIRequestsPerSync, r.ScrapesPerSync, r.ProxiedPagesPerSync, r.StatusWritesPerSync, r.ResizesSentPerSync,
			r.StepToResizeP50Seconds, r.StepToResizeMaxSeconds, r.StepResized, r.StepPods)
	}
	_ = tw.Flush()
}

func printRequests(w *os.File, rs []*result) {
	fmt.Fprintln(w, "\nAPI requests per sync by verb and resource (apiserver_request_total, the simulated kubelets' own left out):")
	for _, r := range rs {
		keys := make([]string, 0, len(r.APIRequestsByVerbResource))
		for k := range r.APIRequestsByVerbResource {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			return r.APIRequestsByVerbResource[keys[i]] > r.APIRequestsByVerbResource[keys[j]]
		})
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %.1f", k, r.APIRequestsByVerbResource[k]))
		}
		fmt.Fprintf(w, "  %s %s: %s\n", size{r.Pods, r.Nodes, r.Policies, r.Shards, limitName(r.MemoryLimitBytes)}, r.Source, strings.Join(parts, ", "))
		var changed []string
		for k, v := range r.StatusChangesPerSync {
			changed = append(changed, fmt.Sprintf("%s %.1f", k, v))
		}
		sort.Strings(changed)
		fmt.Fprintf(w, "    status writes per sync that changed: %s\n", strings.Join(changed, ", "))
	}
}

func writeJSON(path string, rs []*result) error {
	b, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

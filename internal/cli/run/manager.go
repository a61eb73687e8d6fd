package run

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tailorhq/tailor/internal/cli/buildinfo"
	"github.com/tailorhq/tailor/internal/cli/exit"
	"github.com/tailorhq/tailor/internal/cli/flags"
	"github.com/tailorhq/tailor/internal/cli/kube"
	policyctrl "github.com/tailorhq/tailor/internal/controller/policy"
	"github.com/tailorhq/tailor/internal/dashboard"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/internal/metrics/kubelet"
	"github.com/tailorhq/tailor/internal/metrics/prometheus"
	"github.com/tailorhq/tailor/internal/shard"
)

// ManagerOptions holds `tailor manager` flags.
type ManagerOptions struct {
	configFlags *genericclioptions.ConfigFlags
	streams     genericiooptions.IOStreams

	// The flags fill the manager's own options, so there is one list of them.
	manager.Options
	prometheus flags.PrometheusClient
	prices     flags.Prices
	logs       logFlags
}

// NewManagerCommand is `tailor manager`, the autoscaler.
func NewManagerCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ManagerOptions{configFlags: configFlags, streams: streams}
	return o.command()
}

// command is the cobra command whose flags fill o.
func (o *ManagerOptions) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the autoscaler: watch TailorPolicies and resize their pods in place",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Complete(cmd.Flags().Changed("metrics-secure"))
			o.PrometheusGuardrails = cmd.Flags().Changed("prometheus-url")
			o.prices.Complete(cmd.Flags())
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.MetricsSource, "metrics-source", "kubelet", "where usage comes from: kubelet, metrics-server, prometheus, or agent (the node agents' reports, each second where they run; docs/agent.md)")
	f.StringVar(&o.AgentAddr, "agent-bind-address", manager.DefaultAgentAddr, "with --metrics-source=agent, where the node agents' reports are taken")
	f.StringVar(&o.AgentServiceAccount, "agent-service-account", manager.DefaultAgentServiceAccount, "with --metrics-source=agent, the agents' service account (<namespace>:<name>); reports under any other identity are refused")
	f.StringVar(&o.AgentFallback, "agent-fallback", "kubelet", "with --metrics-source=agent, the source read for pods on nodes with no fresh agent report: kubelet, metrics-server, prometheus or none")
	f.StringVar(&o.AgentService, "agent-service", manager.DefaultAgentService, "with --metrics-source=agent, <namespace>/<name> of the Service in front of the report port: the reports are taken over TLS with a certificate for its names, and --agent-tls-secret and --agent-ca-configmap are in its namespace")
	f.StringVar(&o.AgentTLSSecret, "agent-tls-secret", manager.DefaultAgentTLSSecret, "with --metrics-source=agent, the Secret (tls.crt, tls.key, ca.crt) holding the certificate the reports are served with: made and renewed by the managers, with a CA of their own, unless --agent-tls-provided")
	f.BoolVar(&o.AgentTLSProvided, "agent-tls-provided", false, "with --metrics-source=agent, --agent-tls-secret is the operator's (e.g. a cert-manager Certificate's, with ca.crt): only read, re-read each minute, never written")
	f.StringVar(&o.AgentCAConfigMap, "agent-ca-configmap", manager.DefaultAgentCAConfigMap, "with --metrics-source=agent, the ConfigMap where the managers publish the certificate's CA bundle (ca.crt, no key) for the agents")
	f.StringVar(&o.PrometheusURL, "prometheus-url", "http://127.0.0.1:9090", "Prometheus HTTP API: with --metrics-source=prometheus, where usage is read; the canaries' query guardrails (behavior.scaleDown.canary.guardrails.queries) ask it when it is given or usage comes from it")
	o.prometheus.Bind(f)
	f.DurationVar(&o.PrometheusRateWindow, "prometheus-rate-window", prometheus.DefaultWindow, "with --metrics-source=prometheus, the range of the CPU queries' rate(): at least four of the Prometheus' scrape intervals of the kubelets' cAdvisor (2m for a 30s scrape), so a missed scrape leaves a rate. A new container's CPU is read once it has run two of these")
	f.BoolVar(&o.KubeletThrottling, "kubelet-throttling", true, "with --metrics-source=kubelet, also read CFS throttling from /metrics/cadvisor")
	f.BoolVar(&o.AllowResizePreemption, "allow-resize-preemption", false, "let policies with behavior.scaleUp.preemption: PreemptLowerPriority send a raise no room in place can be made for beyond its node's free room, for the scheduler to preempt pods of lower priority for (Kubernetes 1.37, feature gate InPlacePodVerticalScalingSchedulerPreemption, which the manager checks at start in the apiserver's /metrics where it may read it; docs/behaviour.md). The pods preempted may be any namespace's: leave it off where tenants share nodes")
	f.BoolVar(&o.KubeletViaAPIServerProxy, "kubelet-via-apiserver-proxy", false, "with --metrics-source=kubelet, read the kubelets through the apiserver's node proxy instead of on their own port: needs get on nodes/proxy, which reaches every kubelet endpoint (exec, attach, port-forward, the pods' logs; CIS Kubernetes Benchmark 5.1.14), where direct reads need only get on nodes/metrics")
	f.StringVar(&o.KubeletCAFile, "kubelet-ca-file", "", "with --metrics-source=kubelet, the CA bundle the kubelets' serving certificates are verified against; empty: the CA the manager verifies the apiserver with (the cluster CA in a pod), which signs the kubelets' certificates when they are bootstrapped (serverTLSBootstrap)")
	f.BoolVar(&o.KubeletInsecureTLS, "kubelet-insecure-tls", false, "INSECURE: with --metrics-source=kubelet, do not verify the kubelets' serving certificates, sending the manager's credentials to whatever answers at a node's address; only while the kubelets serve self-signed certificates (kubeadm's default)")
	f.StringSliceVar(&o.KubeletAddressTypes, "kubelet-preferred-address-types", addressTypeNames(kubelet.DefaultAddressTypes), "with --metrics-source=kubelet, the order in which a Node's status.addresses are tried to reach its kubelet (Hostname, InternalIP, ExternalIP, InternalDNS, ExternalDNS); the port is its status.daemonEndpoints.kubeletEndpoint, 10250 when unset")
	f.Var(newByteSize(&o.KubeletMaxPageBytes, kubelet.DefaultMaxPageBytes), "kubelet-max-page-bytes", "with --metrics-source=kubelet, the largest metrics page read (bytes, or a quantity such as 32Mi): a larger one is refused unread (a resource page holds its node's containers, TooLarge; a cadvisor page their throttling figures), logged once and counted in tailor_kubelet_pages_refused_total. /metrics/cadvisor is about 74KB a pod of one container: 32Mi holds 250 pods of two")
	f.DurationVar(&o.SyncPeriod, "sync-period", 10*time.Second, "how often each policy's usage is read and its pods reconsidered")
	f.DurationVar(&o.CheckpointInterval, "checkpoint-interval", time.Minute, "how often at most each policy's learnt state is written to its TailorCheckpoint")
	f.IntVar(&o.ConcurrentSyncs, "concurrent-syncs", policyctrl.DefaultConcurrentSyncs, "how many policies are synced at once (a policy is never synced twice at once)")
	f.Float32Var(&o.KubeAPIQPS, "kube-api-qps", manager.DefaultKubeAPIQPS, "requests per second the manager may send the apiserver (resizes, status, checkpoints, events); the kubelet source's proxied reads are bounded by their concurrency instead")
	f.IntVar(&o.KubeAPIBurst, "kube-api-burst", manager.DefaultKubeAPIBurst, "requests the manager may send the apiserver in a burst above --kube-api-qps")
	f.BoolVar(&o.LeaderElect, "leader-elect", true, "elect a leader so only one replica resizes")
	f.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "kube-system", "namespace of the leader election lease")
	f.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", manager.DefaultLeaseDuration, "how long a leader's lease lasts unrenewed: another replica takes over a dead leader within this plus the retry period")
	f.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", manager.DefaultRenewDeadline, "how long the leader keeps trying to renew its lease before it gives leadership up (and exits)")
	f.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", manager.DefaultRetryPeriod, "how often candidates try to take the lease and the leader renews it")
	f.IntVar(&o.Shard.Count, "shards", 1, "how many managers split the cluster's namespaces between them (each needs its own --shard-index; docs/scale.md)")
	f.IntVar(&o.Shard.Index, "shard-index", 0, "which of the --shards this manager is, from 0: it syncs the policies of the namespaces this shard owns, under a lease of its own")
	f.StringSliceVar(&o.Namespaces, "namespaces", nil, "the only namespaces whose policies this manager syncs, comma-separated (one manager per tenant; with --shards, these namespaces split between the shards); it still watches every pod and node, for the room on each node, under a lease of its own. Empty: every namespace")
	f.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", `address of the Prometheus metrics endpoint ("0" disables)`)
	f.BoolVar(&o.MetricsSecure, "metrics-secure", true, "serve the metrics over HTTPS, only to clients the apiserver authenticates and authorizes to get /metrics (ClusterRole tailor-metrics-reader); false is plain HTTP to anyone. Unless set, a loopback --metrics-bind-address (127.0.0.1, ::1, localhost) is served plain HTTP, for local runs")
	f.StringVar(&o.MetricsCertDir, "metrics-cert-dir", "", "with --metrics-secure, the directory of the metrics' serving certificate, tls.crt and tls.key (reloaded when they change); empty: a self-signed certificate made at start")
	f.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	f.StringVar(&o.PprofAddr, "pprof-bind-address", "0", `address of Go's /debug/pprof profiles, for looking into the manager's memory and CPU ("0" disables)`)
	f.StringVar(&o.DashboardAddr, "dashboard-bind-address", "0", `address of the read-only web dashboard, e.g. 127.0.0.1:8082 (reach it with kubectl port-forward); "0" disables`)
	f.IntVar(&o.DashboardPoints, "dashboard-history-points", dashboard.DefaultPoints, "points of usage history each container keeps for the dashboard's charts, one per sync period (40 bytes each)")
	o.prices.Bind(f)
	o.logs.bind(f)
	return cmd
}

// Complete fills what the flags leave to the manager: a loopback metrics
// address, unless --metrics-secure was set (secureSet), is served plain
// HTTP. Only the host's own processes reach it, and a manager run by hand
// or by a test is then scraped with curl and no token.
func (o *ManagerOptions) Complete(secureSet bool) {
	if !secureSet && loopback(o.MetricsAddr) {
		o.MetricsSecure = false
	}
}

// loopback reports whether addr (host:port) listens on a loopback address
// only; an empty host is every address.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Validate checks the flags.
func (o *ManagerOptions) Validate() error {
	if !slices.Contains(manager.Sources, o.MetricsSource) {
		return exit.Usagef("unknown --metrics-source %q: use kubelet, metrics-server, prometheus or agent", o.MetricsSource)
	}
	if o.MetricsSource == "agent" {
		if o.AgentFallback != "none" && (o.AgentFallback == "agent" || !slices.Contains(manager.Sources, o.AgentFallback)) {
			return exit.Usagef("unknown --agent-fallback %q: use kubelet, metrics-server, prometheus or none", o.AgentFallback)
		}
		if ns, name, ok := strings.Cut(o.AgentServiceAccount, ":"); !ok || ns == "" || name == "" || strings.Contains(name, ":") {
			return exit.Usagef("--agent-service-account %q: want <namespace>:<name>", o.AgentServiceAccount)
		}
		ns, name, ok := strings.Cut(o.AgentService, "/")
		if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1035Label(name)) > 0 {
			return exit.Usagef("--agent-service %q: want <namespace>/<name> of a Service", o.AgentService)
		}
		for flag, v := range map[string]string{"--agent-tls-secret": o.AgentTLSSecret, "--agent-ca-configmap": o.AgentCAConfigMap} {
			if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
				return exit.Usagef("%s %q: %s", flag, v, strings.Join(errs, "; "))
			}
		}
	}
	if o.KubeletCAFile != "" && o.KubeletInsecureTLS {
		return exit.Usagef("--kubelet-ca-file and --kubelet-insecure-tls exclude each other: give the CA, or skip the check")
	}
	if _, err := kubelet.ParseAddressTypes(o.KubeletAddressTypes); err != nil {
		return exit.Usagef("--kubelet-preferred-address-types: %v", err)
	}
	if o.KubeletMaxPageBytes < 64<<10 {
		return exit.Usagef("--kubelet-max-page-bytes must be at least 64Ki (a node's /metrics/resource page alone is about 1KB a pod), got %d", o.KubeletMaxPageBytes)
	}
	if err := flags.ValidatePrometheusURL("--prometheus-url", o.PrometheusURL); err != nil {
		return err
	}
	// PromQL ranges are whole milliseconds; under a second no scrape
	// interval leaves two samples in it. 0 is the default.
	if w := o.PrometheusRateWindow; w < 0 || (w > 0 && w < time.Second) || w%time.Millisecond != 0 {
		return exit.Usagef("--prometheus-rate-window %s: want a duration of at least 1s, in whole milliseconds", o.PrometheusRateWindow)
	}
	pc, err := o.prometheus.ClientConfig(o.PrometheusURL)
	if err != nil {
		return err
	}
	o.PrometheusClient = pc
	if o.SyncPeriod < time.Second {
		return exit.Usagef("--sync-period must be at least 1s, got %s", o.SyncPeriod)
	}
	if o.LeaderElect && (o.RetryPeriod <= 0 || o.RetryPeriod >= o.RenewDeadline || o.RenewDeadline >= o.LeaseDuration) {
		return exit.Usagef("leader election needs 0 < --leader-elect-retry-period (%s) < --leader-elect-renew-deadline (%s) < --leader-elect-lease-duration (%s)",
			o.RetryPeriod, o.RenewDeadline, o.LeaseDuration)
	}
	if o.Shard.Count < 1 {
		return exit.Usagef("--shards must be at least 1, got %d", o.Shard.Count)
	}
	if err := o.Shard.Validate(); err != nil {
		return exit.Usagef("--shards %d --shard-index %d: %v", o.Shard.Count, o.Shard.Index, err)
	}
	if err := (shard.Shard{Namespaces: o.Namespaces}).Validate(); err != nil {
		return exit.Usagef("--namespaces: %v", err)
	}
	if o.DashboardPoints < 2 {
		return exit.Usagef("--dashboard-history-points must be at least 2, got %d", o.DashboardPoints)
	}
	if err := o.prices.Validate(); err != nil {
		return err
	}
	o.Prices, o.ExamplePrices = o.prices.Prices, o.prices.Example()
	if o.CheckpointInterval < time.Second {
		return exit.Usagef("--checkpoint-interval must be at least 1s, got %s", o.CheckpointInterval)
	}
	if o.MetricsCertDir != "" {
		if !o.MetricsSecure {
			return exit.Usagef("--metrics-cert-dir %q needs --metrics-secure: plain HTTP has no certificate", o.MetricsCertDir)
		}
		// The metrics server would fall back to a self-signed certificate
		// without a word: a mistyped directory must fail here instead.
		for _, name := range []string{"tls.crt", "tls.key"} {
			if _, err := os.Stat(filepath.Join(o.MetricsCertDir, name)); err != nil {
				return exit.Usagef("--metrics-cert-dir %q: %v (want tls.crt and tls.key there, e.g. a kubernetes.io/tls Secret mounted)", o.MetricsCertDir, err)
			}
		}
	}
	return nil
}

// binaryPages is what the manager's own binary keeps resident beside the
// Go heap: its code and read-only data, mapped from the file and charged
// to the container's memory like the heap. The scale benchmark measured
// 45-48 MiB of them at every size (docs/scale.md).
const binaryPages = 48 << 20

// goMemLimit is the Go heap's soft limit for a container memory limit of
// limit bytes: what is left once the binary's pages and a tenth for stacks
// and the runtime are set aside, whichever is more. A plain 90% left the
// pages too little under small limits: at 150Mi the kernel kept evicting
// them, and the manager spent its time faulting its own code back in.
func goMemLimit(limit uint64) uint64 {
	reserve := max(limit/10, binaryPages)
	if limit <= 2*reserve {
		// Too small a limit to set much aside: half of it still beats a
		// heap that doubles into the OOM killer.
		return limit / 2
	}
	return limit - reserve
}

// Run starts the manager and blocks until ctx ends.
func (o *ManagerOptions) Run(ctx context.Context) error {
	o.logs.setup(o.streams.ErrOut)
	build := buildinfo.Current()
	ctrl.Log.WithName("setup").Info("starting the manager", "version", build.Version, "commit", build.Commit, "go", build.GoVersion, "platform", build.Platform)
	if err := buildinfo.Register(ctrlmetrics.Registry, build); err != nil {
		return err
	}
	cfg, err := kube.RESTConfig(o.configFlags)
	if err != nil {
		return err
	}
	// The Go runtime does not know the container's memory limit; without
	// a soft limit its heap grows to twice what is live before a
	// collection, which at 10,000 pods is more than the live heap itself
	// (docs/scale.md). GOMEMLIMIT, when set, wins. It logs what it set, or
	// why it set nothing.
	_, _ = memlimit.SetGoMemLimitWithOpts(
		memlimit.WithRatio(1),
		memlimit.WithProvider(func() (uint64, error) {
			l, err := memlimit.FromCgroup()
			return goMemLimit(l), err
		}),
		memlimit.WithLogger(slog.New(logr.ToSlogHandler(ctrl.Log.WithName("memlimit")))),
	)
	mgr, err := manager.New(cfg, o.Options)
	if err != nil {
		return err
	}
	if ctx == nil || ctx == context.Background() {
		ctx = ctrl.SetupSignalHandler()
	}
	return mgr.Start(ctx)
}

// addressTypeNames are types as a flag lists them.
func addressTypeNames(types []corev1.NodeAddressType) []string {
	out := make([]string, len(types))
	for i, t := range types {
		out[i] = string(t)
	}
	return out
}

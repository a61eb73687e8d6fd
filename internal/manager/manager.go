package manager

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/common/config"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/internal/agentcert"
	policyctrl "github.com/tailorhq/tailor/internal/controller/policy"
	"github.com/tailorhq/tailor/internal/controller/policy/gather"
	"github.com/tailorhq/tailor/internal/dashboard"
	"github.com/tailorhq/tailor/internal/featuregate"
	"github.com/tailorhq/tailor/internal/metrics"
	agentsource "github.com/tailorhq/tailor/internal/metrics/agent"
	"github.com/tailorhq/tailor/internal/metrics/kubelet"
	"github.com/tailorhq/tailor/internal/metrics/metricsserver"
	"github.com/tailorhq/tailor/internal/metrics/prometheus"
	"github.com/tailorhq/tailor/internal/preemption"
	"github.com/tailorhq/tailor/internal/price"
	"github.com/tailorhq/tailor/internal/recommend"
	"github.com/tailorhq/tailor/internal/shard"
)

// Sources are the metrics sources a manager can read usage from.
var Sources = []string{"kubelet", "metrics-server", "prometheus", "agent"}

// Options configure a manager.
type Options struct {
	// MetricsSource is one of Sources.
	MetricsSource string
	PrometheusURL string
	// PrometheusClient says how to connect and authenticate to
	// PrometheusURL (Prometheus' own http_config); nil is plain HTTP(S)
	// with no credentials.
	PrometheusClient *config.HTTPClientConfig
	// PrometheusRateWindow is the range of the CPU queries' rate(); 0 is
	// the source's default (1m).
	PrometheusRateWindow time.Duration
	// PrometheusGuardrails: the canaries' query guardrails ask
	// PrometheusURL even though usage comes from elsewhere (the CLI sets it
	// when --prometheus-url is given). With usage from Prometheus they ask
	// it anyway; otherwise a policy with query guardrails is not Ready.
	PrometheusGuardrails bool
	KubeletThrottling    bool
	// AllowResizePreemption lets policies whose behavior.scaleUp.preemption
	// is PreemptLowerPriority send a raise beyond its node's free room for
	// the scheduler to preempt pods of lower priority for: an operator's
	// choice, since the pods evicted may be any team's.
	AllowResizePreemption bool
	// KubeletViaAPIServerProxy reads the kubelets through the apiserver's
	// node proxy, which needs get on nodes/proxy (every kubelet endpoint,
	// exec included); false reads each kubelet on its own port, which
	// needs get on nodes/metrics, the port reachable from the manager, and
	// the kubelets' serving certificates verifiable.
	KubeletViaAPIServerProxy bool
	// KubeletCAFile verifies the kubelets' serving certificates; "" is the
	// CA the manager verifies the apiserver with (the cluster CA, in a
	// pod). KubeletInsecureTLS verifies nothing. Both are for direct reads.
	KubeletCAFile      string
	KubeletInsecureTLS bool
	// KubeletAddressTypes is the order in which a Node's addresses are
	// tried for direct reads; empty is kubelet.DefaultAddressTypes.
	KubeletAddressTypes []string
	// KubeletMaxPageBytes is the largest kubelet metrics page read; 0 is
	// kubelet.DefaultMaxPageBytes.
	KubeletMaxPageBytes int64
	SyncPeriod          time.Duration
	// CheckpointInterval is how often at most learnt state is written;
	// 0 is the controller's default.
	CheckpointInterval time.Duration
	// Recommender replaces the recommender's defaults (tests); nil keeps
	// them.
	Recommender *recommend.Config

	LeaderElect             bool
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod are the leader lease's
	// timing; 0 takes the defaults below, which say how soon a standby
	// takes over a leader that died.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// ConcurrentSyncs is how many policies are synced at once; 0 is the
	// controller's default.
	ConcurrentSyncs int
	// KubeAPIQPS and KubeAPIBurst bound the manager's requests to the
	// apiserver (resizes, status, checkpoints, events) where the config
	// does not set its own; 0 is DefaultKubeAPIQPS and DefaultKubeAPIBurst.
	// The kubelet source's reads through the apiserver proxy (when asked
	// for) are not counted here: at most kubelet.DefaultConcurrency of
	// them are in flight, which bounds them.
	KubeAPIQPS   float32
	KubeAPIBurst int
	// MetricsAddr and ProbeAddr: "0" disables.
	MetricsAddr string
	ProbeAddr   string
	// MetricsSecure serves the metrics over HTTPS to clients the apiserver
	// authenticates (TokenReview) and authorizes to get /metrics
	// (SubjectAccessReview), as kubebuilder scaffolds it; false is plain
	// HTTP to anyone who reaches the address. The manager binary's default
	// is true.
	MetricsSecure bool
	// MetricsCertDir holds the metrics' serving certificate, tls.crt and
	// tls.key, reloaded when they change; "" is a self-signed certificate
	// made at start. Only with MetricsSecure.
	MetricsCertDir string
	// PprofAddr serves Go's /debug/pprof profiles; "" or "0" disables.
	PprofAddr string
	// DashboardAddr serves the read-only web dashboard; "" or "0"
	// disables it. DashboardPoints is how many points of history each
	// container keeps for its charts (0: dashboard.DefaultPoints).
	DashboardAddr   string
	DashboardPoints int
	// Prices put the dashboard's monthly costs on requests (nodes may
	// carry their own); ExamplePrices says they are price.Example, not
	// given.
	Prices        price.Prices
	ExamplePrices bool
	// Namespaces scope the manager to a tenant: it syncs the policies of
	// these namespaces only, watches policies, checkpoints and HPAs in them
	// only, and takes a lease of its own (shard.Shard.LeaseName). It still
	// watches every pod and node, since a node's room counts every pod on
	// it, so its RBAC stays cluster-wide. Empty is every namespace.
	Namespaces []string
	// Shard is the slice of the cluster's namespaces (of Namespaces, when
	// set) this manager syncs the policies of, under a lease of its own;
	// the zero value is every namespace. Its own Namespaces may be left
	// empty: Namespaces fills them.
	Shard shard.Shard
	// AgentAddr is where the node agents' reports are taken, with
	// MetricsSource "agent" ("" is DefaultAgentAddr).
	AgentAddr string
	// AgentServiceAccount is the agents' identity, <namespace>:<name>;
	// a report under any other is refused ("" is
	// DefaultAgentServiceAccount).
	AgentServiceAccount string
	// AgentFallback is the source read for pods on nodes with no fresh
	// agent report: kubelet (""), metrics-server, prometheus, or none.
	AgentFallback string
	// AgentService is <namespace>/<name> of the Service in front of the
	// report port ("" is DefaultAgentService): the reports are served over
	// TLS with a certificate for its names, kept in Secret AgentTLSSecret
	// of its namespace, whose CA bundle is published there in ConfigMap
	// AgentCAConfigMap for the agents ("": the defaults).
	AgentService     string
	AgentTLSSecret   string
	AgentCAConfigMap string
	// AgentTLSProvided: the Secret is the operator's (e.g. cert-manager's:
	// tls.crt, tls.key, ca.crt), only read; false: the managers make it,
	// with a CA of their own, and renew it.
	AgentTLSProvided bool
	// SkipNameValidation allows several managers in one process (tests).
	SkipNameValidation bool
}

// The leader lease's defaults. A replica takes over from a leader that died
// without releasing its lease once the lease has gone unrenewed for
// LeaseDuration by its own clock; it notices a renewal, and tries to take
// the lease, every RetryPeriod plus up to 120% jitter (client-go's). So the
// takeover comes within LeaseDuration plus twice 2.2 RetryPeriods of the
// death: 12.4 s here, where controller-runtime's 15 s / 10 s / 2 s would
// allow 23.8 s. The leader renews every RetryPeriod (one small write a
// second) and, unable to renew for RenewDeadline (an apiserver outage that
// long), gives up and exits, so that its Deployment restarts it as a
// candidate.
const (
	DefaultLeaseDuration = 8 * time.Second
	DefaultRenewDeadline = 6 * time.Second
	DefaultRetryPeriod   = 1 * time.Second
)

// scope is the shard the manager owns: Shard, narrowed to Namespaces.
func (o Options) scope() (shard.Shard, error) {
	sh := o.Shard
	switch {
	case len(o.Namespaces) == 0:
	case len(sh.Namespaces) == 0:
		sh.Namespaces = slices.Clone(o.Namespaces)
	case !slices.Equal(sh.Namespaces, o.Namespaces):
		return shard.Shard{}, fmt.Errorf("namespaces %q and the shard's namespaces %q differ: set Options.Namespaces only", o.Namespaces, sh.Namespaces)
	}
	if err := sh.Validate(); err != nil {
		return shard.Shard{}, fmt.Errorf("the manager's namespaces: %w", err)
	}
	return sh, nil
}

// ptrOr is a pointer to d, or to d's default when d is 0.
func ptrOr(d, def time.Duration) *time.Duration {
	if d == 0 {
		d = def
	}
	return &d
}

// The manager's default client-side rate limit. client-go's own default
// (5 per second, bursts of 10) held a 1,000-pod, 20-policy manager's
// pass over its policies to the whole 10s sync period (the scale
// benchmark, bench/cmd/scale-bench); kube-controller-manager's (20, 30) is
// for a process with many controllers sharing it. At 10,000 busy pods the
// manager writes about 75 times a second (status, resizes, checkpoints:
// docs/scale.md), which 50 a second held back for the whole sync period;
// the apiserver's priority and fairness, not this, protects it from
// overload.
const (
	DefaultKubeAPIQPS   = 100
	DefaultKubeAPIBurst = 200
)

// Scheme knows the core types and TailorPolicy.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// New builds a manager running the TailorPolicy controller.
func New(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS, cfg.Burst = o.KubeAPIQPS, o.KubeAPIBurst
		if cfg.QPS == 0 {
			cfg.QPS = DefaultKubeAPIQPS
		}
		if cfg.Burst == 0 {
			cfg.Burst = DefaultKubeAPIBurst
		}
	}
	sh, err := o.scope()
	if err != nil {
		return nil, err
	}
	// What follows reads the shard, scope included, from o.Shard.
	o.Shard = sh
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	server, err := actuator.Discover(dc)
	if err != nil {
		return nil, err
	}
	rec := recommend.DefaultConfig()
	if o.Recommender != nil {
		rec = *o.Recommender
	}
	if err := rec.Validate(); err != nil {
		return nil, fmt.Errorf("recommender configuration: %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   CacheOptions(o.Shard),
		Metrics:                 metricsServerOptions(o),
		HealthProbeBindAddress:  o.ProbeAddr,
		PprofBindAddress:        o.PprofAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        o.Shard.LeaseName("tailor-manager"),
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		LeaseDuration:           ptrOr(o.LeaseDuration, DefaultLeaseDuration),
		RenewDeadline:           ptrOr(o.RenewDeadline, DefaultRenewDeadline),
		RetryPeriod:             ptrOr(o.RetryPeriod, DefaultRetryPeriod),
		// A leader that stops cleanly (a rollout, a drain) hands over at
		// once instead of making the next one wait out the lease. Safe here:
		// the manager's main returns as soon as the manager stops.
		LeaderElectionReleaseOnCancel: true,
		Controller:                    crconfig.Controller{SkipNameValidation: &o.SkipNameValidation},
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	// The kubelet source finds the nodes' addresses in the cache, which
	// watches the nodes for their room anyway.
	nodes := cachedNodes(mgr.GetClient())
	var source metrics.Source
	var receiver *agentsource.Receiver
	var keeper *agentcert.Keeper
	if o.MetricsSource == "agent" {
		if source, receiver, keeper, err = newAgentSource(cfg, nodes, o); err != nil {
			return nil, err
		}
	} else if source, err = NewSource(cfg, nodes, o); err != nil {
		return nil, err
	}
	// The controller lists pods by node for headroom.
	if err := IndexPods(mgr); err != nil {
		return nil, err
	}
	// Resizes are followed with a watch, which the cached client lacks.
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	guardrails, err := newGuardrails(o)
	if err != nil {
		return nil, err
	}
	r := &policyctrl.Reconciler{
		Client:             mgr.GetClient(),
		APIReader:          mgr.GetAPIReader(),
		Clock:              clock.RealClock{},
		Events:             mgr.GetEventRecorder("tailor"),
		Source:             source,
		Actuator:           &actuator.Actuator{Client: wc, Server: server},
		SyncPeriod:         o.SyncPeriod,
		Recommender:        rec,
		CheckpointInterval: o.CheckpointInterval,
		ConcurrentSyncs:    o.ConcurrentSyncs,
		Shard:              o.Shard,
		Guardrails:         guardrails,
		AllowPreemption:    o.AllowResizePreemption,
	}
	if o.AllowResizePreemption {
		ctx, cancel := context.WithTimeout(context.Background(), SourceTimeout)
		r.PreemptionUnavailable = PreemptionUnavailable(ctx, dc.RESTClient())
		cancel()
	}
	if receiver != nil {
		w := newWaker(mgr.GetClient(), o.Shard, ctrl.Log.WithName("agent-wakeups"))
		receiver.Wake, r.Wake = w.wake, w.ch
		addr := o.AgentAddr
		if addr == "" {
			addr = DefaultAgentAddr
		}
		// Every replica takes reports, so a standby that takes over knows
		// every node's figures at once; each keeps the certificate too.
		if err := mgr.Add(everyReplica(keeper.Start)); err != nil {
			return nil, err
		}
		if err := mgr.Add(everyReplica(func(ctx context.Context) error { return serveAgents(ctx, addr, receiver, keeper.GetCertificate) })); err != nil {
			return nil, err
		}
	}
	if o.DashboardAddr != "" && o.DashboardAddr != "0" {
		every := o.SyncPeriod
		if every <= 0 {
			every = 10 * time.Second
		}
		history := dashboard.NewHistory(o.DashboardPoints, every)
		r.Observer = history
		srv := &dashboard.Server{Cache: mgr.GetClient(), Events: mgr.GetAPIReader(), History: history, Clock: clock.RealClock{}, Shard: o.Shard,
			Prices: o.Prices, ExamplePrices: o.ExamplePrices}
		if err := mgr.Add(everyReplica(func(ctx context.Context) error { return srv.Serve(ctx, o.DashboardAddr) })); err != nil {
			return nil, err
		}
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the policy controller: %w", err)
	}
	if o.ProbeAddr != "0" && o.ProbeAddr != "" {
		if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
			return nil, err
		}
		if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
			return nil, err
		}
		if keeper != nil {
			if err := mgr.AddReadyzCheck("agent-tls", keeper.Ready); err != nil {
				return nil, err
			}
		}
	}
	ctrl.Log.Info("tailor manager configured", "server", server.GitVersion, "mode", server.Mode, "metricsSource", source.Name(), "syncPeriod", o.SyncPeriod, "namespaces", o.Shard)
	return mgr, nil
}

// The secure metrics endpoint asks the apiserver who a scraper is and
// whether it may get /metrics.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// metricsServerOptions serve the manager's metrics as o asks: plain HTTP,
// or HTTPS behind the apiserver's authentication and authorization.
func metricsServerOptions(o Options) crmetrics.Options {
	mo := crmetrics.Options{BindAddress: o.MetricsAddr}
	if !o.MetricsSecure {
		return mo
	}
	mo.SecureServing = true
	mo.FilterProvider = filters.WithAuthenticationAndAuthorization
	mo.CertDir = o.MetricsCertDir
	// HTTP/2 is off, as kubebuilder scaffolds it, against its stream
	// reset and rapid-reset floods (CVE-2023-44487, CVE-2023-39325); a
	// scrape needs nothing more than HTTP/1.1.
	mo.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	return mo
}

// everyReplica runs on every replica, leader or not: a standby's dashboard
// answers (with what it has seen: its cache, and no history until it
// leads) rather than refusing the port-forward.
type everyReplica func(ctx context.Context) error

func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }
func (everyReplica) NeedLeaderElection() bool          { return false }

// SourceTimeout bounds one request to metrics-server or Prometheus, as
// kubelet.DefaultTimeout bounds one kubelet page: past it the policy holds
// for want of data and says so, and its next sync asks again.
const SourceTimeout = 10 * time.Second

// newGuardrails is what the canaries' query guardrails ask: the Prometheus
// usage comes from, or the one PrometheusGuardrails names; nil when there is
// none, and a policy with query guardrails then says so.
func newGuardrails(o Options) (gather.GuardrailQuerier, error) {
	fromPrometheus := o.MetricsSource == "prometheus" || (o.MetricsSource == "agent" && o.AgentFallback == "prometheus")
	if !fromPrometheus && !o.PrometheusGuardrails {
		return nil, nil
	}
	pc, err := prometheus.NewClient(o.PrometheusURL, o.PrometheusClient, SourceTimeout)
	if err != nil {
		return nil, fmt.Errorf("the canaries' query guardrails: %w", err)
	}
	return prometheus.NewGuardrails(pc), nil
}

// NewSource builds the metrics source o names; the kubelet source reading
// the kubelets directly looks their nodes up with nodes.
func NewSource(cfg *rest.Config, nodes kubelet.NodeGetter, o Options) (metrics.Source, error) {
	switch o.MetricsSource {
	case "metrics-server":
		// A metrics-server (or the aggregation layer in front of it) that
		// hangs must fail the read, not stall the policy's sync for ever.
		mcfg := rest.CopyConfig(cfg)
		mcfg.Timeout = SourceTimeout
		mc, err := metricsclient.NewForConfig(mcfg)
		if err != nil {
			return nil, err
		}
		return metricsserver.New(mc.MetricsV1beta1(), metricsserver.Options{}), nil
	case "prometheus":
		pc, err := prometheus.NewClient(o.PrometheusURL, o.PrometheusClient, SourceTimeout)
		if err != nil {
			return nil, err
		}
		return prometheus.New(pc, prometheus.Options{Window: o.PrometheusRateWindow})
	case "kubelet", "":
		pages, err := kubeletPages(cfg, nodes, o)
		if err != nil {
			return nil, err
		}
		sh, err := o.scope()
		if err != nil {
			return nil, err
		}
		var keep func(string) bool
		if !sh.OwnsAll() {
			keep = sh.Owns
		}
		return kubelet.New(pages, kubelet.Options{
			Throttling:   o.KubeletThrottling,
			ShareFor:     kubeletShareFor(o.SyncPeriod),
			Concurrency:  kubelet.DefaultConcurrency,
			Namespaces:   keep,
			MaxPageBytes: o.KubeletMaxPageBytes,
			Registerer:   ctrlmetrics.Registry,
		}), nil
	}
	return nil, fmt.Errorf("unknown metrics source %q: use kubelet, metrics-server, prometheus or agent", o.MetricsSource)
}

// kubeletPages is how the kubelet source reaches the kubelets: each on its
// own port, or, when o asks, through the apiserver's node proxy.
func kubeletPages(cfg *rest.Config, nodes kubelet.NodeGetter, o Options) (kubelet.Pages, error) {
	if o.KubeletViaAPIServerProxy {
		// The proxied reads are bounded by the source's concurrency, not
		// by a rate: a rate low enough to protect the apiserver would hold
		// a 500-node pass for minutes.
		kc := rest.CopyConfig(cfg)
		kc.QPS, kc.Burst, kc.RateLimiter = -1, 0, nil
		cs, err := kubernetes.NewForConfig(kc)
		if err != nil {
			return nil, err
		}
		return kubelet.NewAPIServerProxy(cs.CoreV1().RESTClient()), nil
	}
	if nodes == nil {
		return nil, errors.New("reading the kubelets directly needs their nodes' addresses: no node lookup was given")
	}
	do := kubelet.DirectOptions{CAFile: o.KubeletCAFile, InsecureSkipVerify: o.KubeletInsecureTLS}
	if len(o.KubeletAddressTypes) > 0 {
		types, err := kubelet.ParseAddressTypes(o.KubeletAddressTypes)
		if err != nil {
			return nil, fmt.Errorf("the kubelets' preferred address types: %w", err)
		}
		do.AddressTypes = types
	}
	if o.KubeletInsecureTLS {
		ctrl.Log.WithName("setup").Info("the kubelets' serving certificates are not verified (--kubelet-insecure-tls): the manager's credentials go to whatever answers at a node's address")
	}
	return kubelet.NewDirect(cfg, nodes, do)
}

// cachedNodes looks nodes up in the manager's cache.
func cachedNodes(c client.Reader) kubelet.NodeGetter {
	return func(ctx context.Context, name string) (*corev1.Node, error) {
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return nil, err
		}
		return n, nil
	}
}

// newAgentSource builds the agent source: reports taken by a receiver, and
// the fallback source for nodes without a fresh one; and the keeper of the
// certificate the reports are taken over.
func newAgentSource(cfg *rest.Config, nodes kubelet.NodeGetter, o Options) (metrics.Source, *agentsource.Receiver, *agentcert.Keeper, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	receiver, err := newAgentReceiver(cs, o)
	if err != nil {
		return nil, nil, nil, err
	}
	keeper, err := newAgentKeeper(cs, o)
	if err != nil {
		return nil, nil, nil, err
	}
	src := &agentsource.Source{Receiver: receiver, Clock: clock.RealClock{}}
	switch o.AgentFallback {
	case "none":
	case "agent":
		return nil, nil, nil, fmt.Errorf("the agent source's fallback cannot be the agent")
	default:
		fo := o
		fo.MetricsSource = o.AgentFallback
		if src.Fallback, err = NewSource(cfg, nodes, fo); err != nil {
			return nil, nil, nil, fmt.Errorf("the agent source's fallback: %w", err)
		}
	}
	return src, receiver, keeper, nil
}

// kubeletShareFor is how long one read of a node serves every policy: the
// kubelet source's default, but at most half the sync period, so a policy's
// next sync never reuses the read of its last one and a short period (the
// benchmarks' 2s) keeps its reaction time. 0 is the source's default.
func kubeletShareFor(syncPeriod time.Duration) time.Duration {
	if syncPeriod <= 0 {
		return 0
	}
	return min(kubelet.DefaultShareFor, syncPeriod/2)
}

// PreemptionUnavailable says why the cluster's scheduler does not preempt
// for a deferred resize, read from the apiserver's feature gates once at
// start (a gate changes only with a restart of the control plane), or ""
// when it does or cannot be told: a manager that may not read the
// apiserver's /metrics keeps to what its operator said with
// --allow-resize-preemption, and logs that it could not check.
func PreemptionUnavailable(ctx context.Context, rc rest.Interface) string {
	log := ctrl.Log.WithName("setup")
	g := featuregate.Read(ctx, rc, preemption.Gate)
	switch {
	case g.Enabled:
		log.Info("the scheduler preempts for deferred resizes", "why", g.Why)
		return ""
	case g.Answered:
		log.Info("--allow-resize-preemption is set, but the scheduler does not preempt for deferred resizes: policies asking for it are held", "why", g.Why)
		return g.Why
	default:
		log.Info("--allow-resize-preemption is set, and whether the scheduler preempts for deferred resizes could not be checked: trusting the flag", "why", g.Why)
		return ""
	}
}

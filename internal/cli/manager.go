package cli

import (
	"context"
	"fmt"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/actuator"
	policyctrl "github.com/tailorhq/tailor/internal/controller/policy"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/metrics/kubelet"
	"github.com/tailorhq/tailor/internal/metrics/metricsserver"
	"github.com/tailorhq/tailor/internal/metrics/prometheus"
	"github.com/tailorhq/tailor/internal/recommend"
)

func init() { verbs = append(verbs, newManagerCommand) }

// ManagerOptions holds `tailor manager` flags.
type ManagerOptions struct {
	configFlags *genericclioptions.ConfigFlags
	streams     genericiooptions.IOStreams

	MetricsSource           string
	PrometheusURL           string
	KubeletThrottling       bool
	SyncPeriod              time.Duration
	LeaderElect             bool
	LeaderElectionNamespace string
	MetricsAddr             string
	ProbeAddr               string
	Development             bool
}

func newManagerCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ManagerOptions{configFlags: flags, streams: streams}
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the autoscaler: watch TailorPolicies and resize their pods in place",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.MetricsSource, "metrics-source", "kubelet", "where usage comes from: kubelet (fastest), metrics-server or prometheus")
	f.StringVar(&o.PrometheusURL, "prometheus-url", "http://127.0.0.1:9090", "Prometheus HTTP API, with --metrics-source=prometheus")
	f.BoolVar(&o.KubeletThrottling, "kubelet-throttling", true, "with --metrics-source=kubelet, also read CFS throttling from /metrics/cadvisor")
	f.DurationVar(&o.SyncPeriod, "sync-period", 10*time.Second, "how often each policy's usage is read and its pods reconsidered")
	f.BoolVar(&o.LeaderElect, "leader-elect", true, "elect a leader so only one replica resizes")
	f.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "kube-system", "namespace of the leader election lease")
	f.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", `address of the Prometheus metrics endpoint ("0" disables)`)
	f.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	f.BoolVar(&o.Development, "development", false, "human-readable logs")
	return cmd
}

// Validate checks the flags.
func (o *ManagerOptions) Validate() error {
	switch o.MetricsSource {
	case "kubelet", "metrics-server", "prometheus":
	default:
		return usageErrorf("unknown --metrics-source %q: use kubelet, metrics-server or prometheus", o.MetricsSource)
	}
	if o.SyncPeriod < time.Second {
		return usageErrorf("--sync-period must be at least 1s, got %s", o.SyncPeriod)
	}
	return nil
}

// Run starts the manager and blocks until ctx ends.
func (o *ManagerOptions) Run(ctx context.Context) error {
	ctrl.SetLogger(zap.New(zap.UseDevMode(o.Development)))
	cfg, err := o.configFlags.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	server, err := actuator.Discover(dc)
	if err != nil {
		return err
	}
	source, err := o.source()
	if err != nil {
		return err
	}
	rec := recommend.DefaultConfig()
	if err := rec.Validate(); err != nil {
		return fmt.Errorf("recommender configuration: %w", err)
	}

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 crmetrics.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:  o.ProbeAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        "tailor-manager",
		LeaderElectionNamespace: o.LeaderElectionNamespace,
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	// The controller lists pods by node for headroom.
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, "spec.nodeName", func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}); err != nil {
		return fmt.Errorf("indexing pods by node: %w", err)
	}
	watchClient, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	r := &policyctrl.Reconciler{
		Client:      mgr.GetClient(),
		Clock:       clock.RealClock{},
		Events:      mgr.GetEventRecorder("tailor"),
		Source:      source,
		Actuator:    &actuator.Actuator{Client: watchClient, Server: server},
		SyncPeriod:  o.SyncPeriod,
		Recommender: rec,
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the policy controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctrl.Log.Info("starting tailor manager", "server", server.GitVersion, "mode", server.Mode, "metricsSource", source.Name(), "syncPeriod", o.SyncPeriod)
	if ctx == nil || ctx == context.Background() {
		ctx = ctrl.SetupSignalHandler()
	}
	return mgr.Start(ctx)
}

func (o *ManagerOptions) source() (metrics.Source, error) {
	rc, err := o.configFlags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	switch o.MetricsSource {
	case "metrics-server":
		mc, err := metricsclient.NewForConfig(rc)
		if err != nil {
			return nil, err
		}
		return metricsserver.New(mc.MetricsV1beta1(), metricsserver.Options{}), nil
	case "prometheus":
		pc, err := promapi.NewClient(promapi.Config{Address: o.PrometheusURL})
		if err != nil {
			return nil, fmt.Errorf("--prometheus-url %q: %w", o.PrometheusURL, err)
		}
		return prometheus.New(pc, prometheus.Options{})
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return kubelet.New(cs.CoreV1().RESTClient(), kubelet.Options{Throttling: o.KubeletThrottling}), nil
}

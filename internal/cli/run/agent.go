package run

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/tailorhq/tailor/internal/agent"
	"github.com/tailorhq/tailor/internal/agent/cgroup"
	"github.com/tailorhq/tailor/internal/agent/javaheap"
	"github.com/tailorhq/tailor/internal/agent/report"
	"github.com/tailorhq/tailor/internal/cli/buildinfo"
	"github.com/tailorhq/tailor/internal/cli/exit"
	"github.com/tailorhq/tailor/internal/cli/kube"
)

// AgentOptions holds `tailor agent` flags.
type AgentOptions struct {
	configFlags *genericclioptions.ConfigFlags

	CgroupRoot     string
	Interval       time.Duration
	ReportInterval time.Duration
	TokenFile      string
	// ManagerService is <namespace>/<name> of the Service in front of the
	// managers' report port; ManagerURLs, if set, replace it.
	ManagerService string
	ManagerPort    string
	ManagerURLs    []string
	// ManagerCAConfigMap is the ConfigMap, in ManagerService's namespace,
	// where the managers publish their CA bundle; ManagerCAFile replaces
	// it with ManagerURLs.
	ManagerCAConfigMap string
	ManagerCAFile      string
	Thresholds         agent.Thresholds
	MetricsAddr        string
	ProbeAddr          string
	// JVM is --jvm: off, read or softmax (javaheap.Mode); Proc is where
	// the node's processes are (the agent's /proc, with hostPID).
	JVM  string
	Proc string

	logs    logFlags
	streams genericiooptions.IOStreams
}

// NewAgentCommand is `tailor agent`, the node agent.
func NewAgentCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &AgentOptions{configFlags: configFlags, streams: streams, Thresholds: agent.DefaultThresholds()}
	return o.command()
}

func (o *AgentOptions) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the node agent: read this node's pod cgroups every second and report to the managers (a DaemonSet; docs/agent.md)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	th := &o.Thresholds
	f.StringVar(&o.CgroupRoot, "cgroup-root", "/sys/fs/cgroup", "the host's cgroup filesystem, mounted read-only (v1 or v2, found out from what is there)")
	f.DurationVar(&o.Interval, "interval", time.Second, "how often every container's cgroup is read")
	f.DurationVar(&o.ReportInterval, "report-interval", 5*time.Second, "how often a report is pushed when nothing is urgent")
	f.StringVar(&o.TokenFile, "token-file", "/var/run/secrets/tailor/token", "the projected service-account token (audience tailor-manager) sent with each report")
	f.StringVar(&o.ManagerService, "manager-service", "tailor-system/tailor-manager-agents", "<namespace>/<name> of the Service whose endpoints are the managers taking reports")
	f.StringVar(&o.ManagerPort, "manager-port-name", "agent", "the name of that Service's report port")
	f.StringVar(&o.ManagerCAConfigMap, "manager-ca-configmap", "tailor-agent-ca", "the ConfigMap, in --manager-service's namespace, where the managers publish their CA bundle (ca.crt): reports go over TLS only, to a manager whose certificate chains to it and names --manager-service (<name>.<namespace>.svc); until it is read, nothing is sent")
	f.StringSliceVar(&o.ManagerURLs, "manager-url", nil, "https base URLs of the managers, in place of --manager-service's endpoints (development; with --manager-ca-file)")
	f.StringVar(&o.ManagerCAFile, "manager-ca-file", "", "with --manager-url, the PEM bundle of CAs the managers' certificates are checked against, for each URL's host")
	f.Float64Var(&th.Throttled, "urgent-throttled", th.Throttled, "share of CFS periods throttled over one interval that wakes the manager")
	f.Float64Var(&th.CPUPressure, "urgent-cpu-pressure", th.CPUPressure, "cgroup v2: share of time stalled on CPU (PSI some avg10) that wakes the manager")
	f.Float64Var(&th.MemoryMargin, "urgent-memory-margin", th.MemoryMargin, "a working set within this share of its limit wakes the manager")
	f.DurationVar(&th.MemoryLead, "urgent-memory-lead", th.MemoryLead, "a working set growing to reach its limit within this wakes the manager")
	f.Float64Var(&th.MemoryPressure, "urgent-memory-pressure", th.MemoryPressure, "cgroup v2: share of time stalled on memory (PSI some avg10) that wakes the manager")
	f.DurationVar(&th.Cooldown, "wake-cooldown", th.Cooldown, "how long a container that woke the manager waits before it may wake it again")
	f.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", `address of the agent's Prometheus metrics ("0" disables)`)
	f.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "address of /healthz: ok while the cgroups were read within three intervals")
	f.StringVar(&o.JVM, "jvm", string(javaheap.Off), "what the agent does with the JVMs in the pods' containers: off; read (report each JVM's heap maximum and measured non-heap, from its hsperfdata: needs hostPID, root, CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH); softmax (also move ZGC's and Shenandoah's SoftMaxHeapSize with the container's memory limit, through the JVM's attach socket: adds CAP_KILL and CAP_DAC_OVERRIDE). docs/agent.md, \"JVM mode\"")
	f.StringVar(&o.Proc, "proc", "/proc", "the node's proc filesystem, with --jvm: the agent's own, with hostPID")
	o.logs.bind(f)
	return cmd
}

// Validate checks the flags.
func (o *AgentOptions) Validate() error {
	if o.Interval < 100*time.Millisecond {
		return exit.Usagef("--interval must be at least 100ms, got %s", o.Interval)
	}
	if o.ReportInterval < o.Interval {
		return exit.Usagef("--report-interval (%s) must not be shorter than --interval (%s)", o.ReportInterval, o.Interval)
	}
	if len(o.ManagerURLs) == 0 {
		if ns, name, ok := strings.Cut(o.ManagerService, "/"); !ok || ns == "" || name == "" {
			return exit.Usagef("--manager-service %q: want <namespace>/<name>", o.ManagerService)
		}
		if errs := validation.IsDNS1123Subdomain(o.ManagerCAConfigMap); len(errs) > 0 {
			return exit.Usagef("--manager-ca-configmap %q: %s", o.ManagerCAConfigMap, strings.Join(errs, "; "))
		}
	} else {
		for _, u := range o.ManagerURLs {
			if !strings.HasPrefix(u, "https://") {
				return exit.Usagef("--manager-url %q: want https (the agent sends its token over TLS only)", u)
			}
		}
		if o.ManagerCAFile == "" {
			return exit.Usagef("--manager-url needs --manager-ca-file: the CAs the managers' certificates are checked against")
		}
	}
	if _, err := javaheap.ParseMode(o.JVM); err != nil {
		return exit.Usagef("%s", err.Error())
	}
	th := o.Thresholds
	for name, v := range map[string]float64{"--urgent-throttled": th.Throttled, "--urgent-cpu-pressure": th.CPUPressure,
		"--urgent-memory-margin": th.MemoryMargin, "--urgent-memory-pressure": th.MemoryPressure} {
		if v <= 0 || v > 1 {
			return exit.Usagef("%s must be within (0, 1], got %g", name, v)
		}
	}
	if th.MemoryLead < 0 || th.Cooldown < 0 {
		return exit.Usagef("--urgent-memory-lead and --wake-cooldown must not be negative")
	}
	return nil
}

// Run runs the agent until ctx ends.
func (o *AgentOptions) Run(ctx context.Context) error {
	o.logs.setup(o.streams.ErrOut)
	log := ctrl.Log.WithName("agent")
	build := buildinfo.Current()
	log.Info("starting the agent", "version", build.Version, "commit", build.Commit, "go", build.GoVersion, "platform", build.Platform)
	tree, err := detectTree(o.CgroupRoot)
	if err != nil {
		return err
	}
	var managers agent.Managers = agent.StaticManagers(o.ManagerURLs)
	// Static URLs are checked for their own hosts.
	trust := agent.NewTrust("", pushTimeout)
	if len(o.ManagerURLs) == 0 {
		cfg, err := kube.RESTConfig(o.configFlags)
		if err != nil {
			return err
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		ns, name, _ := strings.Cut(o.ManagerService, "/")
		managers = agent.WatchManagers(ctx, cs, ns, name, o.ManagerPort)
		trust = agent.NewTrust(report.ServerName(name, ns), pushTimeout)
		if err := agent.WatchManagerCA(ctx, cs, ns, o.ManagerCAConfigMap, trust, log); err != nil {
			return err
		}
	} else {
		bundle, err := os.ReadFile(o.ManagerCAFile)
		if err != nil {
			return fmt.Errorf("--manager-ca-file: %w", err)
		}
		if _, err := trust.SetBundle(bundle); err != nil {
			return fmt.Errorf("--manager-ca-file %s: %w", o.ManagerCAFile, err)
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := buildinfo.Register(reg, build); err != nil {
		return err
	}
	var lastTick atomic.Int64
	m := agent.NewMetrics(reg)
	errs := make(chan error, 2)
	if o.MetricsAddr != "0" {
		go func() {
			errs <- serve(ctx, o.MetricsAddr, "/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		}()
	}
	if o.ProbeAddr != "0" {
		healthy := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if last := lastTick.Load(); last == 0 || time.Since(time.Unix(0, last)) > 3*o.Interval+time.Second {
				http.Error(w, "the cgroups have not been read lately", http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write([]byte("ok"))
		})
		go func() { errs <- serve(ctx, o.ProbeAddr, "/healthz", healthy) }()
	}
	log.Info("tailor agent started", "cgroupRoot", tree.Root, "cgroupVersion", tree.Version, "interval", o.Interval, "reportInterval", o.ReportInterval)
	mode, _ := javaheap.ParseMode(o.JVM)
	var jvms *javaheap.Watcher
	if mode != javaheap.Off {
		jvms = &javaheap.Watcher{Mode: mode, Tree: tree, Proc: o.Proc, AttachTimeout: 3 * time.Second, Log: log.WithName("jvm")}
		log.Info("JVM mode", "jvm", mode, "proc", o.Proc)
	}
	runErr := make(chan error, 1)
	go func() {
		runErr <- agent.Run(ctx, agent.Options{
			Tree: tree, Interval: o.Interval, ReportEvery: o.ReportInterval, Thresholds: o.Thresholds,
			TokenFile: o.TokenFile, Managers: managers, Trust: trust,
			Log: log, Metrics: m, Ticked: func(t time.Time) { lastTick.Store(t.UnixNano()) },
			JVM: jvms,
		})
	}()
	select {
	case err := <-runErr:
		return err
	case err := <-errs:
		return err
	}
}

// pushTimeout bounds one push, handshake included.
const pushTimeout = 2 * time.Second

// detectTree finds which cgroup hierarchy root holds: v2 has
// cgroup.controllers at its root, v1 a directory per controller.
func detectTree(root string) (cgroup.Tree, error) {
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return cgroup.Tree{Root: root, Version: cgroup.V2}, nil
	}
	if _, err := os.Stat(filepath.Join(root, "memory", "memory.stat")); err == nil {
		return cgroup.Tree{Root: root, Version: cgroup.V1}, nil
	}
	return cgroup.Tree{}, fmt.Errorf("%s is neither a cgroup v2 nor a cgroup v1 hierarchy (mount the host's /sys/fs/cgroup there, read-only)", root)
}

// serve serves h at path on addr until ctx ends.
func serve(ctx context.Context, addr, path string, h http.Handler) error {
	mux := http.NewServeMux()
	mux.Handle(path, h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

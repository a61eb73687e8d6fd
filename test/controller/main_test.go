//go:build controller

package controller

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/internal/manager"
)

// Shared by every test of the package: one apiserver, started once.
var (
	restConfig *rest.Config
	scheme     *runtime.Scheme
	// apiClient reads the apiserver directly: no cache, so what a test
	// wrote is what the next Reconcile sees.
	apiClient client.WithWatch
	clientset kubernetes.Interface
	server    actuator.Server
	// kubeconfig is a kubeconfig file for the apiserver, for the tools
	// that take one (helm template --validate).
	kubeconfig string
)

// The binaries envtest runs; make controller builds them and sets these.
const (
	envAPIServer = "TEST_ASSET_KUBE_APISERVER"
	envEtcd      = "TEST_ASSET_ETCD"
)

func TestMain(m *testing.M) {
	start := time.Now()
	code, err := run(m)
	if err != nil {
		fmt.Fprintf(os.Stderr, "controller tests: %v\n", err)
		code = 1
	}
	fmt.Printf("controller tier: package ran in %s\n", time.Since(start).Round(time.Millisecond))
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	for _, v := range []string{envAPIServer, envEtcd} {
		path := os.Getenv(v)
		if path == "" {
			return 0, fmt.Errorf("%s is not set: run make controller, which builds kube-apiserver and etcd (hack/cluster.sh build etcd kube-apiserver) and sets it", v)
		}
		if _, err := os.Stat(path); err != nil {
			return 0, fmt.Errorf("%s: %w (hack/cluster.sh build etcd kube-apiserver builds it)", v, err)
		}
	}
	// The manager scenario logs through controller-runtime's global logger.
	ctrl.SetLogger(logr.Discard())
	env := &envtest.Environment{
		// tailor's CRDs, VerticalPodAutoscaler's, which tailor yields to,
		// and the Prometheus Operator's that the chart renders objects of.
		CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases"), filepath.Join("..", "testdata", "vpa"),
			filepath.Join("..", "testdata", "prometheus-operator")},
		ErrorIfCRDPathMissing: true,
		// envtest's 20s default: a CI run beside the -race unit tests on
		// two cores saw kube-apiserver 1.37 not ready within it five times
		// in a row. Readiness is waited for, not timed.
		ControlPlaneStartTimeout: 3 * time.Minute,
	}
	cfg, err := env.Start()
	if err != nil {
		return 0, fmt.Errorf("starting kube-apiserver and etcd: %w", err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "controller tests: stopping the apiserver: %v\n", err)
		}
	}()
	cfg.QPS, cfg.Burst = 500, 1000
	restConfig = cfg
	admin, err := env.AddUser(envtest.User{Name: "tailor-controller-test", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return 0, err
	}
	data, err := admin.KubeConfig()
	if err != nil {
		return 0, err
	}
	dir, err := os.MkdirTemp("", "tailor-controller-")
	if err != nil {
		return 0, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
		return 0, err
	}
	if scheme, err = manager.Scheme(); err != nil {
		return 0, err
	}
	if apiClient, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme}); err != nil {
		return 0, err
	}
	if clientset, err = kubernetes.NewForConfig(cfg); err != nil {
		return 0, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return 0, err
	}
	// Discover is what the manager runs: it also proves the apiserver
	// serves pods/resize.
	if server, err = actuator.Discover(dc); err != nil {
		return 0, fmt.Errorf("discovering the envtest apiserver: %w", err)
	}
	if server.Mode != actuator.ModeSubresource {
		return 0, fmt.Errorf("envtest apiserver %s does not serve pods/resize (mode %s)", server.GitVersion, server.Mode)
	}
	return m.Run(), nil
}

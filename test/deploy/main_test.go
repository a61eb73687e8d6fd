//go:build e2e

package deploy

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

var (
	// Not -kubeconfig: controller-runtime registers that flag on the
	// command line, and this package imports it (through internal/cli, in
	// TestManagerArgsParse).
	kubeconfig = flag.String("deploy-kubeconfig", envOr("TAILOR_KUBECONFIG", "/var/lib/tailor-dev/admin.kubeconfig"), "admin kubeconfig of the cluster the manifests are checked against")

	restConfig *rest.Config
	clientset  kubernetes.Interface
	dyn        dynamic.Interface
	mapper     *restmapper.DeferredDiscoveryRESTMapper
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func TestMain(m *testing.M) {
	flag.Parse()
	if err := setup(); err != nil {
		fmt.Fprintf(os.Stderr, "deploy: %v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func setup() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("cannot load kubeconfig %s (is the cluster up? run hack/cluster.sh up): %w", *kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	restConfig = cfg
	if clientset, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	return nil
}

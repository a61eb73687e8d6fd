package oracle

import (
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// envtestConfig is the apiserver TestMain started for the run when no
// cluster is named: nil otherwise.
var envtestConfig *rest.Config

// TestMain starts an envtest kube-apiserver and etcd (random ports, no node,
// no controllers) when TAILOR_KUBECONFIG names no cluster and
// TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD name the binaries, as
// make oracle sets them. Every oracle but the node-capacity cases (no node)
// then runs against it; ResourceQuota status, which no quota controller
// writes there, the tests write as it would.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("TAILOR_KUBECONFIG") != "" || os.Getenv("TEST_ASSET_KUBE_APISERVER") == "" || os.Getenv("TEST_ASSET_ETCD") == "" {
		return m.Run()
	}
	// envtest's 20s default start timeout is too short on a loaded 2-core
	// machine (test/controller's main_test.go says when).
	env := &envtest.Environment{ControlPlaneStartTimeout: 3 * time.Minute}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "oracle: starting kube-apiserver and etcd (envtest): %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "oracle: stopping envtest: %v\n", err)
		}
	}()
	envtestConfig = cfg
	return m.Run()
}

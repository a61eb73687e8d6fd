package cluster

import (
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// DefaultKubeconfig is where hack/cluster.sh writes the admin kubeconfig.
const DefaultKubeconfig = "/var/lib/tailor-dev/admin.kubeconfig"

// Kubeconfig is the local cluster's admin kubeconfig: $TAILOR_KUBECONFIG,
// else DefaultKubeconfig.
func Kubeconfig() string {
	if v := os.Getenv("TAILOR_KUBECONFIG"); v != "" {
		return v
	}
	return DefaultKubeconfig
}

// Connect loads a kubeconfig with client rate limits fit for test suites
// that create many objects quickly.
func Connect(path string) (*rest.Config, *kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot load kubeconfig %s (is the cluster up? run hack/cluster.sh up): %w", path, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return cfg, cs, nil
}

package kube

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Clients are what a verb talks to the cluster with, built from kubectl's
// standard flags (--kubeconfig, --context, -n, ...).
type Clients struct {
	Client    client.WithWatch
	Discovery discovery.DiscoveryInterface
	Namespace string
}

// NewClients builds the Clients the flags and kubeconfig name.
func NewClients(flags *genericclioptions.ConfigFlags) (*Clients, error) {
	cfg, err := RESTConfig(flags)
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return nil, fmt.Errorf("creating client for %s: %w", cfg.Host, err)
	}
	dc, err := flags.ToDiscoveryClient()
	if err != nil {
		return nil, fmt.Errorf("creating discovery client: %w", err)
	}
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("reading namespace from kubeconfig: %w", err)
	}
	return &Clients{Client: c, Discovery: dc, Namespace: ns}, nil
}

// errNoKubeconfig is a kubeconfig that names no cluster, outside a cluster.
// client-go then falls back to http://localhost:8080, and the user would be
// told only that a connection to 127.0.0.1:8080 was refused.
var errNoKubeconfig = errors.New("no kubeconfig found")

// IsNoKubeconfig reports whether err is RESTConfig's for a kubeconfig that
// names no cluster.
func IsNoKubeconfig(err error) bool { return errors.Is(err, errNoKubeconfig) }

// RESTConfig is the client configuration the flags and kubeconfig give, or
// an error saying where tailor looked and how to name a cluster.
func RESTConfig(flags *genericclioptions.ConfigFlags) (*rest.Config, error) {
	loader := flags.ToRawKubeConfigLoader()
	if !namesAServer(flags) {
		raw, err := loader.RawConfig()
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig: %w", err)
		}
		if len(raw.Clusters) == 0 && !inCluster() {
			return nil, noKubeconfigError(flags, loader.ConfigAccess().GetLoadingPrecedence())
		}
	}
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return cfg, nil
}

// namesAServer reports whether a flag or the environment names the
// apiserver outright, whatever the kubeconfig files say.
func namesAServer(flags *genericclioptions.ConfigFlags) bool {
	// KUBERNETES_MASTER is client-go's own old default server.
	return (flags.APIServer != nil && *flags.APIServer != "") || os.Getenv("KUBERNETES_MASTER") != ""
}

// noKubeconfigError says which files were read and how to name a cluster.
func noKubeconfigError(flags *genericclioptions.ConfigFlags, files []string) error {
	const how = "give one with --kubeconfig FILE or KUBECONFIG=FILE, or an apiserver with --server URL"
	if flags.KubeConfig != nil && *flags.KubeConfig != "" {
		return fmt.Errorf("%w: --kubeconfig %s names no cluster: %s", errNoKubeconfig, *flags.KubeConfig, how)
	}
	looked := "looked in " + strings.Join(files, ", ")
	if os.Getenv("KUBECONFIG") == "" {
		looked += "; KUBECONFIG is not set"
	}
	return fmt.Errorf("%w (%s) and not running in a cluster: %s", errNoKubeconfig, looked, how)
}

// inCluster is client-go's own test for the in-cluster configuration it
// falls back to: the service account token and the service's address.
func inCluster() bool {
	_, err := rest.InClusterConfig()
	return err == nil
}

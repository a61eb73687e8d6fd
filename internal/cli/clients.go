package cli

import (
	"fmt"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// clients are what a verb talks to the cluster with, built from kubectl's
// standard flags (--kubeconfig, --context, -n, ...).
type clients struct {
	client    client.WithWatch
	discovery discovery.DiscoveryInterface
	namespace string
}

func newClients(flags *genericclioptions.ConfigFlags) (*clients, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
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
	return &clients{client: c, discovery: dc, namespace: ns}, nil
}

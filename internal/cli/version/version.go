package version

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/yaml"

	"github.com/tailorhq/tailor/internal/cli/buildinfo"
	"github.com/tailorhq/tailor/internal/cli/exit"
	"github.com/tailorhq/tailor/internal/cli/kube"
)

// VersionReport is the machine-readable `tailor version` (-o json|yaml).
// The server's version is the apiserver's own /version answer, as kubectl
// prints it.
type VersionReport struct {
	ClientVersion buildinfo.Info `json:"clientVersion"`
	ServerVersion *version.Info  `json:"serverVersion,omitempty"`
}

// VersionOptions holds `tailor version` flags.
type VersionOptions struct {
	configFlags *genericclioptions.ConfigFlags
	streams     genericiooptions.IOStreams

	Client bool
	Output string
	// ServerTimeout bounds the wait for the apiserver: `tailor version` is
	// what one runs when something is wrong, and must not hang on it.
	ServerTimeout time.Duration
}

const defaultVersionServerTimeout = 5 * time.Second

// NewCommand is `tailor version`.
func NewCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &VersionOptions{configFlags: configFlags, streams: streams, ServerTimeout: defaultVersionServerTimeout}
	cmd := &cobra.Command{
		Use:   "version [--client] [-o json|yaml]",
		Short: "Print tailor's version, and the Kubernetes server's when a kubeconfig reaches one",
		Long: `Print tailor's version, the commit it was built from, the Go version and
the platform. When a kubeconfig (or --server) names a cluster, the
apiserver's version too, waiting at most 5 seconds for it; --client skips it.`,
		Example: `  tailor version
  tailor version --client -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVar(&o.Client, "client", false, "print the client version only, without contacting the cluster")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "output format: json or yaml (default: human-readable)")
	return cmd
}

// Validate checks the flags.
func (o *VersionOptions) Validate() error {
	switch o.Output {
	case "", "json", "yaml":
		return nil
	}
	return exit.Usagef("unknown output format %q: use json or yaml", o.Output)
}

// Run prints the versions. A cluster that cannot be reached is a warning,
// not a failure: the client's version is still the answer asked for.
func (o *VersionOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	rep := VersionReport{ClientVersion: buildinfo.Current()}
	if !o.Client {
		info, err := o.serverVersion(ctx)
		switch {
		case err != nil:
			fmt.Fprintf(o.streams.ErrOut, "warning: server version not read: %v (--client skips the server)\n", err)
		default:
			rep.ServerVersion = info
		}
	}
	return printVersion(o.streams.Out, rep, o.Output)
}

// serverVersion asks the apiserver for its version; nil and no error when
// no kubeconfig names one.
func (o *VersionOptions) serverVersion(ctx context.Context) (*version.Info, error) {
	cfg, err := kube.RESTConfig(o.configFlags)
	if err != nil {
		if kube.IsNoKubeconfig(err) {
			return nil, nil
		}
		return nil, err
	}
	cfg.Timeout = o.ServerTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating discovery client for %s: %w", cfg.Host, err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.ServerTimeout)
	defer cancel()
	// The error names the server's address already.
	return dc.ServerVersionWithContext(ctx)
}

func printVersion(w io.Writer, rep VersionReport, output string) error {
	switch output {
	case "json":
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(b))
		return err
	case "yaml":
		b, err := yaml.Marshal(rep)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	c := rep.ClientVersion
	commit := c.Commit
	if commit == "" {
		commit = "unknown"
	}
	_, err := fmt.Fprintf(w, "Version:   %s\nCommit:    %s\nGo:        %s\nPlatform:  %s\n", c.Version, commit, c.GoVersion, c.Platform)
	if err == nil && rep.ServerVersion != nil {
		_, err = fmt.Fprintf(w, "Server:    %s\n", rep.ServerVersion.GitVersion)
	}
	return err
}

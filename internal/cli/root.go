package cli

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/tailorhq/tailor/internal/cli/demo"
	"github.com/tailorhq/tailor/internal/cli/exit"
	"github.com/tailorhq/tailor/internal/cli/replay"
	"github.com/tailorhq/tailor/internal/cli/report"
	"github.com/tailorhq/tailor/internal/cli/resize"
	"github.com/tailorhq/tailor/internal/cli/run"
	"github.com/tailorhq/tailor/internal/cli/status"
	"github.com/tailorhq/tailor/internal/cli/version"
)

// NewRootCommand builds the tailor command tree.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	configFlags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:           "tailor",
		Short:         "In-place vertical autoscaling for Kubernetes",
		Long:          "tailor right-sizes pods' CPU and memory in place through the pod resize subresource.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return exit.WithCode(exit.Usage, err) })
	configFlags.AddFlags(root.PersistentFlags())
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)

	root.AddCommand(
		version.NewCommand(configFlags, streams),
		run.NewAgentCommand(configFlags, streams),
		demo.NewCommand(configFlags, streams),
		run.NewManagerCommand(configFlags, streams),
		replay.NewCommand(streams),
		report.NewCommand(configFlags, streams),
		resize.NewCommand(configFlags, streams),
		status.NewCommand(configFlags, streams),
	)
	return root
}

// How the binary was invoked decides how it names itself. kubectl runs a
// plugin kubectl-NAME for `kubectl NAME`, and since kubectl 1.26 completes
// `kubectl NAME ...` by running kubectl_complete-NAME with the words typed so
// far, the last one being the word to complete (kubectl's
// pkg/cmd/plugin/plugin_completion.go).
const (
	pluginBinary     = "kubectl-tailor"
	completionBinary = "kubectl_complete-tailor"
	pluginName       = "kubectl tailor"
)

// Execute runs the CLI and returns the process exit code. argv0 is the name
// the binary was invoked as.
func Execute(argv0 string, args []string, in io.Reader, out, errOut io.Writer) int {
	streams := genericiooptions.IOStreams{In: in, Out: out, ErrOut: errOut}
	root := NewRootCommand(streams)
	switch filepath.Base(argv0) {
	case completionBinary:
		// kubectl wants what cobra's hidden __complete prints: one
		// candidate a line, then :DIRECTIVE.
		args = append([]string{cobra.ShellCompRequestCmd}, args...)
		asPlugin(root)
	case pluginBinary:
		asPlugin(root)
	}
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exit.OK
	}
	fmt.Fprintf(errOut, "error: %v\n", err)
	var ee *exit.CodeError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if strings.HasPrefix(err.Error(), "unknown command") || strings.Contains(err.Error(), "accepts ") {
		return exit.Usage
	}
	return exit.Error
}

// asPlugin makes help and examples read "kubectl tailor ...". The display
// name changes only what is printed: the command's own name stays tailor,
// so cobra's completion scripts define __start_tailor and complete tailor,
// never kubectl's own __start_kubectl and kubectl.
func asPlugin(root *cobra.Command) {
	if root.Annotations == nil {
		root.Annotations = map[string]string{}
	}
	root.Annotations[cobra.CommandDisplayNameAnnotation] = pluginName
	var visit func(*cobra.Command)
	visit = func(c *cobra.Command) {
		c.Example = strings.ReplaceAll(c.Example, "  tailor ", "  "+pluginName+" ")
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(root)
	root.InitDefaultCompletionCmd()
	if c, _, err := root.Find([]string{"completion"}); err == nil && c != root {
		c.Long += `

As a kubectl plugin, "kubectl tailor" is completed by kubectl's own
completion (kubectl 1.26 or later): it runs an executable named
kubectl_complete-tailor from PATH. make install links one; by hand:

  ln -s "$(command -v kubectl-tailor)" "$(dirname "$(command -v kubectl-tailor)")/kubectl_complete-tailor"

The scripts below complete the tailor command itself.`
	}
}

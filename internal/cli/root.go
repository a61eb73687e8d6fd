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
)

// Exit codes are part of the CLI's contract for scripts.
const (
	ExitOK    = 0
	ExitError = 1
	// ExitUsage is a bad flag or argument: the user must change the command.
	ExitUsage = 2
	// ExitRefused means Kubernetes would refuse (or did refuse) the resize.
	ExitRefused = 3
)

// exitError carries an exit code through cobra's error return.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withExitCode attaches an exit code to err.
func withExitCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// usageErrorf reports a mistake in the command line itself.
func usageErrorf(format string, args ...any) error {
	return withExitCode(ExitUsage, fmt.Errorf(format, args...))
}

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
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withExitCode(ExitUsage, err) })
	configFlags.AddFlags(root.PersistentFlags())
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)

	root.AddCommand(newVersionCommand(configFlags, streams))
	for _, add := range verbs {
		root.AddCommand(add(configFlags, streams))
	}
	return root
}

// verbs lets each verb's file register its constructor, keeping root.go free
// of a growing list of imports and wiring.
var verbs []func(*genericclioptions.ConfigFlags, genericiooptions.IOStreams) *cobra.Command

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
		return ExitOK
	}
	fmt.Fprintf(errOut, "error: %v\n", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if strings.HasPrefix(err.Error(), "unknown command") || strings.Contains(err.Error(), "accepts ") {
		return ExitUsage
	}
	return ExitError
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

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

// Execute runs the CLI and returns the process exit code. argv0 is the name
// the binary was invoked as.
func Execute(argv0 string, args []string, in io.Reader, out, errOut io.Writer) int {
	streams := genericiooptions.IOStreams{In: in, Out: out, ErrOut: errOut}
	root := NewRootCommand(streams)
	// Invoked as kubectl-tailor, help text should read "kubectl tailor".
	if strings.HasPrefix(filepath.Base(argv0), "kubectl-") {
		root.Use = "kubectl tailor"
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

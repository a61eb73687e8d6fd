package version

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/tailorhq/tailor/internal/cli/clitest"
)

// An apiserver that does not answer holds `tailor version` no longer than
// its timeout.
func TestVersionServerTimeout(t *testing.T) {
	srv, _ := clitest.APIServer(t, time.Minute)
	flags := genericclioptions.NewConfigFlags(false)
	flags.APIServer = &srv.URL
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	o := &VersionOptions{configFlags: flags, streams: streams, ServerTimeout: 200 * time.Millisecond}
	start := time.Now()
	if err := o.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s with a 200ms timeout", d)
	}
	if !strings.Contains(errOut.String(), "server version not read") || !strings.Contains(out.String(), "Version:") {
		t.Errorf("stdout %q, stderr %q: want the client's version and a warning", out.String(), errOut.String())
	}
}

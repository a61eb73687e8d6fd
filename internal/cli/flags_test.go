package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tailorhq/tailor/internal/cli/clitest"
	"github.com/tailorhq/tailor/internal/cli/exit"
)

// A mistake in the command line exits 2 with what to change, and before
// the cluster is asked anything.
func TestUsageErrorsBeforeTheCluster(t *testing.T) {
	srv, calls := clitest.APIServer(t, 0)
	cases := map[string]struct {
		args    []string
		wantErr string
	}{
		"report, not a URL":        {args: []string{"report", "--prometheus-url", "::bad"}, wantErr: `--prometheus-url "::bad": want an http:// or https:// URL`},
		"report, no scheme":        {args: []string{"report", "--prometheus-url", "localhost:9090"}, wantErr: `--prometheus-url "localhost:9090"`},
		"report, no host":          {args: []string{"report", "--prometheus-url", "http://"}, wantErr: `--prometheus-url "http://"`},
		"manager, not a URL":       {args: []string{"manager", "--prometheus-url", "::bad"}, wantErr: `--prometheus-url "::bad"`},
		"status, bad output":       {args: []string{"status", "-o", "xml"}, wantErr: `unknown output format "xml"`},
		"resize, unknown resource": {args: []string{"resize", "web-0", "--requests", "foo=1"}, wantErr: `unknown resource "foo"`},
		"resize, repeated":         {args: []string{"resize", "web-0", "--requests", "cpu=1,cpu=2"}, wantErr: "cpu is given twice"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := calls.Load()
			var out, errOut bytes.Buffer
			args := append(tc.args, "--server", srv.URL)
			if code := Execute("tailor", args, nil, &out, &errOut); code != exit.Usage {
				t.Errorf("exit %d, want %d (usage)", code, exit.Usage)
			}
			if !strings.Contains(errOut.String(), tc.wantErr) {
				t.Errorf("stderr = %q, want %q", errOut.String(), tc.wantErr)
			}
			if n := calls.Load() - before; n != 0 {
				t.Errorf("the apiserver was asked %d times before the usage error", n)
			}
		})
	}
}

package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tailorhq/tailor/internal/cli/exit"
)

// noKubeconfig points client-go at an empty home and no KUBECONFIG.
func noKubeconfig(t *testing.T) {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_MASTER", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
}

// With no kubeconfig, a verb that needs the cluster says so and how to give
// one, instead of a refused connection to localhost:8080.
func TestNoKubeconfig(t *testing.T) {
	noKubeconfig(t)
	empty := filepath.Join(t.TempDir(), "empty.kubeconfig")
	if err := os.WriteFile(empty, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		args    []string
		wantErr []string
	}{
		"status": {args: []string{"status"}, wantErr: []string{"no kubeconfig found", ".kube/config", "KUBECONFIG is not set", "--kubeconfig FILE"}},
		"resize": {args: []string{"resize", "web-0", "--limits", "cpu=1"}, wantErr: []string{"no kubeconfig found"}},
		"report": {args: []string{"report"}, wantErr: []string{"no kubeconfig found"}},
		"an empty --kubeconfig": {
			args: []string{"status", "--kubeconfig", empty}, wantErr: []string{"--kubeconfig " + empty + " names no cluster", "--server URL"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := Execute("tailor", tc.args, nil, &out, &errOut); code != exit.Error {
				t.Errorf("exit %d, want %d", code, exit.Error)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr lacks %q: %s", w, errOut.String())
				}
			}
			if strings.Contains(errOut.String(), "8080") {
				t.Errorf("stderr names the fallback localhost:8080: %s", errOut.String())
			}
		})
	}
}

package cli

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/version"

	"github.com/tailorhq/tailor/internal/cli/buildinfo"
	"github.com/tailorhq/tailor/internal/cli/clitest"
	"github.com/tailorhq/tailor/internal/cli/exit"
	versioncmd "github.com/tailorhq/tailor/internal/cli/version"
)

func TestVersionVerb(t *testing.T) {
	noKubeconfig(t)
	srv, calls := clitest.APIServer(t, 0)
	client := buildinfo.Current()
	cases := map[string]struct {
		args        []string
		wantCode    int
		wantOut     []string
		wantErrOut  string
		wantCalls   int32
		wantJSON    *versioncmd.VersionReport
		wantNoOutIn string
	}{
		"human, with the server": {
			args:      []string{"version", "--server", srv.URL},
			wantOut:   []string{"Version:   " + client.Version, "Go:        " + runtime.Version(), "Platform:  " + runtime.GOOS + "/" + runtime.GOARCH, "Server:    v1.37.1"},
			wantCalls: 1,
		},
		"json, with the server": {
			args:      []string{"version", "--server", srv.URL, "-o", "json"},
			wantCalls: 1,
			wantJSON:  &versioncmd.VersionReport{ClientVersion: client, ServerVersion: &version.Info{Major: "1", Minor: "37", GitVersion: "v1.37.1"}},
		},
		"yaml": {
			args: []string{"version", "--client", "-o", "yaml"}, wantOut: []string{"clientVersion:", "goVersion: " + runtime.Version()},
		},
		"--client does not ask the server": {
			args: []string{"version", "--client", "--server", srv.URL, "-o", "json"}, wantJSON: &versioncmd.VersionReport{ClientVersion: client},
		},
		"no kubeconfig: the client alone, quietly": {
			args: []string{"version"}, wantOut: []string{"Version:"}, wantNoOutIn: "Server:",
		},
		"unreachable server: a warning, still the client": {
			args: []string{"version", "--server", "http://127.0.0.1:1"}, wantOut: []string{"Version:"},
			wantErrOut: "warning: server version not read", wantNoOutIn: "Server:",
		},
		"bad output": {
			args: []string{"version", "-o", "xml"}, wantCode: exit.Usage, wantErrOut: `unknown output format "xml"`,
		},
		"arguments": {
			args: []string{"version", "extra"}, wantCode: exit.Usage, wantErrOut: `unknown command "extra"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := calls.Load()
			var out, errOut bytes.Buffer
			if code := Execute("tailor", tc.args, nil, &out, &errOut); code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.wantCode, errOut.String())
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, out.String())
				}
			}
			if tc.wantNoOutIn != "" && strings.Contains(out.String(), tc.wantNoOutIn) {
				t.Errorf("stdout has %q:\n%s", tc.wantNoOutIn, out.String())
			}
			if !strings.Contains(errOut.String(), tc.wantErrOut) || (tc.wantErrOut == "" && errOut.Len() > 0) {
				t.Errorf("stderr = %q, want %q", errOut.String(), tc.wantErrOut)
			}
			if got := calls.Load() - before; got != tc.wantCalls {
				t.Errorf("apiserver asked %d times, want %d", got, tc.wantCalls)
			}
			if tc.wantJSON != nil {
				var got versioncmd.VersionReport
				if err := json.Unmarshal(out.Bytes(), &got); err != nil {
					t.Fatalf("stdout is not JSON: %v\n%s", err, out.String())
				}
				if diff := cmp.Diff(*tc.wantJSON, got); diff != "" {
					t.Errorf("version JSON (-want,+got):\n%s", diff)
				}
			}
		})
	}
}

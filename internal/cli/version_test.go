package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func TestClientVersion(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	vcs := func(settings ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}
		for i := 0; i < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return bi
	}
	cases := map[string]struct {
		version, commit string
		bi              *debug.BuildInfo
		want            ClientVersion
	}{
		"stamped by make build": {
			version: "v0.1.0-3-gabcdef0", commit: "abcdef0123", bi: vcs("vcs.revision", "ffff"),
			want: ClientVersion{Version: "v0.1.0-3-gabcdef0", Commit: "abcdef0123", GoVersion: "go1.26.0", Platform: platform},
		},
		"go install of a tag": {
			bi:   &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.1.0"}},
			want: ClientVersion{Version: "v0.1.0", GoVersion: "go1.26.0", Platform: platform},
		},
		"go build in a checkout": {
			bi:   vcs("vcs.revision", "0123abcd", "vcs.modified", "false"),
			want: ClientVersion{Version: "(devel)", Commit: "0123abcd", GoVersion: "go1.26.0", Platform: platform},
		},
		"go build in a dirty checkout": {
			bi:   vcs("vcs.revision", "0123abcd", "vcs.modified", "true"),
			want: ClientVersion{Version: "(devel)", Commit: "0123abcd-dirty", GoVersion: "go1.26.0", Platform: platform},
		},
		"nothing recorded": {
			want: ClientVersion{Version: "(devel)", GoVersion: runtime.Version(), Platform: platform},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, clientVersion(tc.version, tc.commit, tc.bi)); diff != "" {
				t.Errorf("clientVersion (-want,+got):\n%s", diff)
			}
		})
	}
}

// fakeAPIServer answers /version as an apiserver does and counts the calls.
func fakeAPIServer(t *testing.T, delay time.Duration) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		_ = json.NewEncoder(w).Encode(version.Info{Major: "1", Minor: "37", GitVersion: "v1.37.1"})
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestVersionVerb(t *testing.T) {
	noKubeconfig(t)
	srv, calls := fakeAPIServer(t, 0)
	bi, _ := debug.ReadBuildInfo()
	client := clientVersion(buildVersion, buildCommit, bi)
	cases := map[string]struct {
		args        []string
		wantCode    int
		wantOut     []string
		wantErrOut  string
		wantCalls   int32
		wantJSON    *VersionReport
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
			wantJSON:  &VersionReport{ClientVersion: client, ServerVersion: &version.Info{Major: "1", Minor: "37", GitVersion: "v1.37.1"}},
		},
		"yaml": {
			args: []string{"version", "--client", "-o", "yaml"}, wantOut: []string{"clientVersion:", "goVersion: " + runtime.Version()},
		},
		"--client does not ask the server": {
			args: []string{"version", "--client", "--server", srv.URL, "-o", "json"}, wantJSON: &VersionReport{ClientVersion: client},
		},
		"no kubeconfig: the client alone, quietly": {
			args: []string{"version"}, wantOut: []string{"Version:"}, wantNoOutIn: "Server:",
		},
		"unreachable server: a warning, still the client": {
			args: []string{"version", "--server", "http://127.0.0.1:1"}, wantOut: []string{"Version:"},
			wantErrOut: "warning: server version not read", wantNoOutIn: "Server:",
		},
		"bad output": {
			args: []string{"version", "-o", "xml"}, wantCode: ExitUsage, wantErrOut: `unknown output format "xml"`,
		},
		"arguments": {
			args: []string{"version", "extra"}, wantCode: ExitUsage, wantErrOut: `unknown command "extra"`,
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
				var got VersionReport
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

// An apiserver that does not answer holds `tailor version` no longer than
// its timeout.
func TestVersionServerTimeout(t *testing.T) {
	srv, _ := fakeAPIServer(t, time.Minute)
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

// The build is exported once, labelled as `tailor version` prints it, and a
// second registration in the same process (a test that runs the manager
// twice) is not an error.
func TestBuildInfoMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	v := ClientVersion{Version: "v0.3.1", Commit: "abc123", GoVersion: "go1.26.0", Platform: "linux/arm64"}
	for range 2 {
		if err := registerBuildInfo(reg, v); err != nil {
			t.Fatal(err)
		}
	}
	want := `# HELP tailor_build_info A constant 1 labelled with the running tailor's version, commit, Go version and platform.
# TYPE tailor_build_info gauge
tailor_build_info{commit="abc123",goversion="go1.26.0",platform="linux/arm64",version="v0.3.1"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "tailor_build_info"); err != nil {
		t.Error(err)
	}
}

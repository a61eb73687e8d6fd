package cli

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/test/builder"
)

// securedPrometheus is a Prometheus stand-in behind TLS that answers the
// report's queries (/api/v1/query and /api/v1/query_range) with no series
// when check passes on the request, and 401 when it does not. It counts
// every request.
type securedPrometheus struct {
	*httptest.Server
	served, refused atomic.Int32
	// ca is a file holding the server's certificate, the CA to check it
	// against.
	ca string
}

func newSecuredPrometheus(t *testing.T, check func(r *http.Request) error) *securedPrometheus {
	t.Helper()
	p := &securedPrometheus{}
	p.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := check(r); err != nil {
			p.refused.Add(1)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		resultType := "vector"
		switch r.URL.Path {
		case "/api/v1/query":
		case "/api/v1/query_range":
			resultType = "matrix"
		default:
			p.refused.Add(1)
			http.NotFound(w, r)
			return
		}
		p.served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":%q,"result":[]}}`, resultType)
	}))
	p.Config.ErrorLog = log.New(io.Discard, "", 0)
	p.StartTLS()
	t.Cleanup(p.Close)
	p.ca = writeTempFile(t, "ca.crt", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.Certificate().Raw})))
	return p
}

func writeTempFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// `tailor report --prometheus-url` reaches a secured Prometheus with the
// client flags: TLS under a CA of its own, a bearer token or basic auth,
// and a tenant header.
func TestReportSecuredPrometheus(t *testing.T) {
	token := writeTempFile(t, "token", "s3cret\n")
	password := writeTempFile(t, "password", "hunter2")
	tenant := func(r *http.Request) error {
		if got := r.Header.Get("X-Scope-OrgID"); got != "team-a" {
			return fmt.Errorf("X-Scope-OrgID %q, want team-a", got)
		}
		return nil
	}
	cases := map[string]struct {
		args  []string
		check func(r *http.Request) error
	}{
		"bearer token and a header": {
			args: []string{"--prometheus-bearer-token-file", token, "--prometheus-header", "X-Scope-OrgID=team-a"},
			check: func(r *http.Request) error {
				if got := r.Header.Get("Authorization"); got != "Bearer s3cret" {
					return fmt.Errorf("Authorization %q, want the bearer token", got)
				}
				return tenant(r)
			},
		},
		"basic auth and a header": {
			args: []string{"--prometheus-basic-auth-username", "tailor", "--prometheus-basic-auth-password-file", password, "--prometheus-header=X-Scope-OrgID=team-a"},
			check: func(r *http.Request) error {
				if u, p, ok := r.BasicAuth(); !ok || u != "tailor" || p != "hunter2" {
					return fmt.Errorf("basic auth %q %q %v, want tailor hunter2", u, p, ok)
				}
				return tenant(r)
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			prom := newSecuredPrometheus(t, tc.check)
			scheme, err := manager.Scheme()
			if err != nil {
				t.Fatal(err)
			}
			pod := builder.Pod("web").Namespace("shop").Container(builder.Container("app")).Running().Obj()
			var out bytes.Buffer
			o := &ReportOptions{
				configFlags: genericclioptions.NewConfigFlags(false),
				streams:     genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: io.Discard},
				now:         func() time.Time { return time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC) },
				clients:     &clients{namespace: "shop"},
				client:      fake.NewClientBuilder().WithScheme(scheme).WithObjects(pod).Build(),
			}
			cmd := o.command()
			cmd.SetArgs(append([]string{"--prometheus-url", prom.URL, "--prometheus-ca-file", prom.ca, "-o", "csv"}, tc.args...))
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			if err := cmd.Execute(); err != nil {
				t.Fatalf("report: %v", err)
			}
			// CPU and memory history and throttling, each once.
			if prom.served.Load() != 3 || prom.refused.Load() != 0 {
				t.Errorf("Prometheus served %d queries and refused %d, want 3 served", prom.served.Load(), prom.refused.Load())
			}
			if !strings.Contains(out.String(), "shop,Pod,web,app,") {
				t.Errorf("the report lacks pod web:\n%s", out.String())
			}
		})
	}
}

// A client flag Prometheus would refuse, or a file that will not load, is
// a usage error saying what to change, before the apiserver or Prometheus
// is asked anything.
func TestPrometheusClientUsageErrors(t *testing.T) {
	noKubeconfig(t)
	srv, calls := fakeAPIServer(t, 0)
	prom := newSecuredPrometheus(t, func(*http.Request) error { return nil })
	token := writeTempFile(t, "token", "s3cret")
	notPEM := writeTempFile(t, "ca.crt", "not a certificate")
	badConfig := writeTempFile(t, "http.yaml", "bearer_token_file: /token\nbasic_auth:\n  username: tailor\n")
	unknownField := writeTempFile(t, "http.yaml", "bearer_tokn: x\n")
	emptyHeaders := writeTempFile(t, "http.yaml", "http_headers: {}\n")
	url := []string{"--prometheus-url", prom.URL}
	cases := map[string]struct {
		args    []string
		wantErr string
	}{
		"report, bearer and basic auth": {
			args:    append([]string{"report", "--prometheus-bearer-token-file", token, "--prometheus-basic-auth-username", "u", "--prometheus-basic-auth-password-file", token}, url...),
			wantErr: "--prometheus-bearer-token-file and --prometheus-basic-auth-*: give one way to authenticate, not both",
		},
		"report, password without a user": {
			args:    append([]string{"report", "--prometheus-basic-auth-password-file", token}, url...),
			wantErr: "--prometheus-basic-auth-username and --prometheus-basic-auth-password-file go together",
		},
		"report, certificate without a key": {
			args:    append([]string{"report", "--prometheus-cert-file", prom.ca}, url...),
			wantErr: "--prometheus-cert-file and --prometheus-key-file go together",
		},
		"report, the Authorization header": {
			args:    append([]string{"report", "--prometheus-header", "Authorization=Bearer x"}, url...),
			wantErr: `setting header "Authorization" is not allowed: use --prometheus-bearer-token-file or --prometheus-basic-auth-* instead`,
		},
		"report, a header without a value": {
			args:    append([]string{"report", "--prometheus-header", "X-Scope-OrgID"}, url...),
			wantErr: `--prometheus-header "X-Scope-OrgID": want Name=Value`,
		},
		"report, no token file": {
			args:    append([]string{"report", "--prometheus-bearer-token-file", "/nonexistent/token"}, url...),
			wantErr: "the bearer token file: open /nonexistent/token",
		},
		"report, a CA that is not one": {
			args:    append([]string{"report", "--prometheus-ca-file", notPEM}, url...),
			wantErr: "unable to use specified CA cert",
		},
		"report, client flags without a URL": {
			args:    []string{"report", "--prometheus-bearer-token-file", token},
			wantErr: "the --prometheus-* client flags need --prometheus-url",
		},
		"report, a config file with an unknown field": {
			args:    append([]string{"report", "--prometheus-config", unknownField}, url...),
			wantErr: "field bearer_tokn not found",
		},
		"report, a config file Prometheus refuses": {
			args:    append([]string{"report", "--prometheus-config", badConfig}, url...),
			wantErr: "at most one of basic_auth, oauth2, bearer_token & bearer_token_file",
		},
		"report, a header beside an empty http_headers": {
			args:    append([]string{"report", "--prometheus-config", emptyHeaders, "--prometheus-header", "X-Scope-OrgID=team-a", "--prometheus-ca-file", notPEM}, url...),
			wantErr: "unable to use specified CA cert",
		},
		"manager, bearer and basic auth": {
			args:    append([]string{"manager", "--metrics-source=prometheus", "--prometheus-bearer-token-file", token, "--prometheus-basic-auth-username", "u", "--prometheus-basic-auth-password-file", token}, url...),
			wantErr: "give one way to authenticate, not both",
		},
		"manager, a CA that is not one": {
			args:    append([]string{"manager", "--metrics-source=prometheus", "--prometheus-ca-file", notPEM}, url...),
			wantErr: "unable to use specified CA cert",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before, promBefore := calls.Load(), prom.served.Load()+prom.refused.Load()
			var out, errOut bytes.Buffer
			args := append(tc.args, "--server", srv.URL)
			if code := Execute("tailor", args, nil, &out, &errOut); code != ExitUsage {
				t.Errorf("exit %d, want %d (usage); stderr %q", code, ExitUsage, errOut.String())
			}
			if !strings.Contains(errOut.String(), tc.wantErr) {
				t.Errorf("stderr = %q, want %q", errOut.String(), tc.wantErr)
			}
			if n := calls.Load() - before; n != 0 {
				t.Errorf("the apiserver was asked %d times before the usage error", n)
			}
			if n := prom.served.Load() + prom.refused.Load() - promBefore; n != 0 {
				t.Errorf("Prometheus was asked %d times before the usage error", n)
			}
		})
	}
}

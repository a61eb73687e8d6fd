package cli

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/internal/metrics/prometheus/promtest"
	"github.com/tailorhq/tailor/test/builder"
)

// `tailor report --prometheus-url` reaches a secured Prometheus with the
// client flags: TLS under a CA of its own, a bearer token or basic auth,
// and a tenant header.
func TestReportSecuredPrometheus(t *testing.T) {
	token := promtest.WriteFile(t, "token", "s3cret\n")
	password := promtest.WriteFile(t, "password", "hunter2")
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
			prom := promtest.New(t, &tls.Config{}, tc.check)
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
			cmd.SetArgs(append([]string{"--prometheus-url", prom.URL, "--prometheus-ca-file", prom.CAFile, "-o", "csv"}, tc.args...))
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			if err := cmd.Execute(); err != nil {
				t.Fatalf("report: %v", err)
			}
			// CPU and memory history and throttling, each once.
			if prom.Served.Load() != 3 || prom.Refused.Load() != 0 {
				t.Errorf("Prometheus served %d queries and refused %d, want 3 served", prom.Served.Load(), prom.Refused.Load())
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
	prom := promtest.New(t, &tls.Config{}, func(*http.Request) error { return nil })
	token := promtest.WriteFile(t, "token", "s3cret")
	notPEM := promtest.WriteFile(t, "ca.crt", "not a certificate")
	badConfig := promtest.WriteFile(t, "http.yaml", "bearer_token_file: /token\nbasic_auth:\n  username: tailor\n")
	unknownField := promtest.WriteFile(t, "http.yaml", "bearer_tokn: x\n")
	emptyHeaders := promtest.WriteFile(t, "http.yaml", "http_headers: {}\n")
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
			args:    append([]string{"report", "--prometheus-cert-file", prom.CAFile}, url...),
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
			before, promBefore := calls.Load(), prom.Served.Load()+prom.Refused.Load()
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
			if n := prom.Served.Load() + prom.Refused.Load() - promBefore; n != 0 {
				t.Errorf("Prometheus was asked %d times before the usage error", n)
			}
		})
	}
}

package cli

import (
	"bytes"
	"crypto/tls"
	"net/http"
	"strings"
	"testing"

	"github.com/tailorhq/tailor/internal/cli/clitest"
	"github.com/tailorhq/tailor/internal/cli/exit"
	"github.com/tailorhq/tailor/internal/metrics/prometheus/promtest"
)

// A client flag Prometheus would refuse, or a file that will not load, is
// a usage error saying what to change, before the apiserver or Prometheus
// is asked anything.
func TestPrometheusClientUsageErrors(t *testing.T) {
	noKubeconfig(t)
	srv, calls := clitest.APIServer(t, 0)
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
			if code := Execute("tailor", args, nil, &out, &errOut); code != exit.Usage {
				t.Errorf("exit %d, want %d (usage); stderr %q", code, exit.Usage, errOut.String())
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

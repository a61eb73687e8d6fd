package prometheus_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/config"

	"github.com/tailorhq/tailor/internal/metrics/prometheus"
	"github.com/tailorhq/tailor/internal/metrics/prometheus/promtest"
)

// keyPEM is the PEM of the private key of srv's certificate, so that a
// client can present that certificate as its own.
func keyPEM(t *testing.T, srv *promtest.Server) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(srv.TLS.Certificates[0].PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

func wantHeader(name, want string) func(*http.Request) error {
	return func(r *http.Request) error {
		if got := r.Header.Get(name); got != want {
			return fmt.Errorf("%s %q, want %q", name, got, want)
		}
		return nil
	}
}

// A managed or secured Prometheus is reached the way Prometheus' own
// http_config says: bearer token, basic auth, a header, TLS checked
// against a CA file, a client certificate.
func TestNewClientSecured(t *testing.T) {
	token := promtest.WriteFile(t, "token", "s3cret\n")
	password := promtest.WriteFile(t, "password", "hunter2")
	cases := map[string]struct {
		tls     *tls.Config
		check   func(*http.Request) error
		config  func(t *testing.T, srv *promtest.Server) *config.HTTPClientConfig
		wantErr string
	}{
		"bearer token from a file": {
			check: wantHeader("Authorization", "Bearer s3cret"),
			config: func(*testing.T, *promtest.Server) *config.HTTPClientConfig {
				return &config.HTTPClientConfig{BearerTokenFile: token}
			},
		},
		"basic auth, password from a file": {
			check: func(r *http.Request) error {
				if u, p, ok := r.BasicAuth(); !ok || u != "tailor" || p != "hunter2" {
					return fmt.Errorf("basic auth %q %q %v, want tailor hunter2", u, p, ok)
				}
				return nil
			},
			config: func(*testing.T, *promtest.Server) *config.HTTPClientConfig {
				return &config.HTTPClientConfig{BasicAuth: &config.BasicAuth{Username: "tailor", PasswordFile: password}}
			},
		},
		"a custom header": {
			check: wantHeader("X-Scope-OrgID", "team-a"),
			config: func(*testing.T, *promtest.Server) *config.HTTPClientConfig {
				return &config.HTTPClientConfig{HTTPHeaders: &config.Headers{Headers: map[string]config.Header{"X-Scope-OrgID": {Values: []string{"team-a"}}}}}
			},
		},
		"TLS checked against a CA file": {
			tls:   &tls.Config{},
			check: func(*http.Request) error { return nil },
			config: func(t *testing.T, srv *promtest.Server) *config.HTTPClientConfig {
				return &config.HTTPClientConfig{TLSConfig: config.TLSConfig{CAFile: promtest.WriteFile(t, "ca.crt", srv.CertPEM())}}
			},
		},
		"TLS without the CA is refused": {
			tls:     &tls.Config{},
			check:   func(*http.Request) error { return nil },
			config:  func(*testing.T, *promtest.Server) *config.HTTPClientConfig { return nil },
			wantErr: "certificate",
		},
		"a client certificate": {
			tls: &tls.Config{ClientAuth: tls.RequireAnyClientCert},
			check: func(r *http.Request) error {
				if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
					return fmt.Errorf("no client certificate")
				}
				return nil
			},
			config: func(t *testing.T, srv *promtest.Server) *config.HTTPClientConfig {
				return &config.HTTPClientConfig{TLSConfig: config.TLSConfig{
					CAFile:   promtest.WriteFile(t, "ca.crt", srv.CertPEM()),
					CertFile: promtest.WriteFile(t, "tls.crt", srv.CertPEM()),
					KeyFile:  promtest.WriteFile(t, "tls.key", keyPEM(t, srv)),
				}}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := promtest.New(t, tc.tls, tc.check)
			client, err := prometheus.NewClient(srv.URL, tc.config(t, srv), 10*time.Second)
			if err != nil {
				t.Fatalf("NewClient: %v", err)
			}
			_, _, err = promv1.NewAPI(client).Query(context.Background(), "up", time.Now())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("query = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("query: %v", err)
			}
			if srv.Served.Load() != 1 || srv.Refused.Load() != 0 {
				t.Errorf("served %d, refused %d: want the one query served", srv.Served.Load(), srv.Refused.Load())
			}
		})
	}
}

// NewClient contacts nothing, but a combination Prometheus refuses, or a
// CA that does not load, fails it.
func TestNewClientRefuses(t *testing.T) {
	cases := map[string]struct {
		config  *config.HTTPClientConfig
		wantErr string
	}{
		"bearer and basic auth": {
			config:  &config.HTTPClientConfig{BearerTokenFile: "/token", BasicAuth: &config.BasicAuth{Username: "u"}},
			wantErr: "at most one of basic_auth, oauth2, bearer_token & bearer_token_file",
		},
		"a reserved header": {
			config:  &config.HTTPClientConfig{HTTPHeaders: &config.Headers{Headers: map[string]config.Header{"Authorization": {Values: []string{"x"}}}}},
			wantErr: `setting header "Authorization" is not allowed`,
		},
		"a CA that is not one": {
			config:  &config.HTTPClientConfig{TLSConfig: config.TLSConfig{CAFile: promtest.WriteFile(t, "ca.crt", "not a certificate")}},
			wantErr: "unable to use specified CA cert",
		},
		"a client certificate without its key": {
			config:  &config.HTTPClientConfig{TLSConfig: config.TLSConfig{CertFile: "/tls.crt"}},
			wantErr: "key",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := prometheus.NewClient("http://127.0.0.1:1", tc.config, 0)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("NewClient = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

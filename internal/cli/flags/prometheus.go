package flags

import (
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/prometheus/common/config"
	"github.com/spf13/pflag"

	"github.com/tailorhq/tailor/internal/cli/exit"
	"github.com/tailorhq/tailor/internal/metrics/prometheus"
)

// PrometheusClient flags say how `tailor manager` and `tailor report` reach
// a managed or secured Prometheus. They fill Prometheus' own http_config
// (github.com/prometheus/common/config), the one prometheus.yml's scrape
// and remote-write sections take, so anything the flags do not cover can be
// given in that form with --prometheus-config.
type PrometheusClient struct {
	configFile            string
	bearerTokenFile       string
	basicAuthUsername     string
	basicAuthPasswordFile string
	caFile                string
	certFile              string
	keyFile               string
	insecureSkipVerify    bool
	headers               []string
}

// Bind adds the flags to f.
func (p *PrometheusClient) Bind(f *pflag.FlagSet) {
	f.StringVar(&p.bearerTokenFile, "prometheus-bearer-token-file", "", "a file holding the bearer token sent to Prometheus (read at each request, so a rotated token is picked up)")
	f.StringVar(&p.basicAuthUsername, "prometheus-basic-auth-username", "", "the user name of Prometheus' basic auth, with --prometheus-basic-auth-password-file")
	f.StringVar(&p.basicAuthPasswordFile, "prometheus-basic-auth-password-file", "", "a file holding the password of Prometheus' basic auth")
	f.StringVar(&p.caFile, "prometheus-ca-file", "", "a PEM file of the CA certificates that Prometheus' serving certificate is checked against")
	f.StringVar(&p.certFile, "prometheus-cert-file", "", "a PEM client certificate presented to Prometheus, with --prometheus-key-file")
	f.StringVar(&p.keyFile, "prometheus-key-file", "", "the PEM key of --prometheus-cert-file")
	f.BoolVar(&p.insecureSkipVerify, "prometheus-insecure-skip-verify", false, "do not check Prometheus' serving certificate: for testing only, since anyone on the path can then read the credentials and forge the usage")
	f.StringArrayVar(&p.headers, "prometheus-header", nil, "a header sent to Prometheus with each request, as Name=Value (repeatable), e.g. X-Scope-OrgID=team-a")
	f.StringVar(&p.configFile, "prometheus-config", "", "a YAML file of Prometheus' http_config (authorization, basic_auth, oauth2, tls_config, http_headers, proxy_url, ...) for what the other flags do not cover; the flags given are set over it")
}

// Given says whether any of the flags was given.
func (p *PrometheusClient) Given() bool {
	return p.configFile != "" || p.bearerTokenFile != "" || p.basicAuthUsername != "" || p.basicAuthPasswordFile != "" ||
		p.caFile != "" || p.certFile != "" || p.keyFile != "" || p.insecureSkipVerify || len(p.headers) > 0
}

// ClientConfig is the http_config the flags make for the Prometheus at
// url: --prometheus-config's, if given, with each flag given set over it.
// A combination Prometheus would refuse, a header it reserves, or a file
// that cannot be read or loaded is a usage error saying what to change.
// It contacts nothing.
func (p *PrometheusClient) ClientConfig(url string) (*config.HTTPClientConfig, error) {
	if p.bearerTokenFile != "" && (p.basicAuthUsername != "" || p.basicAuthPasswordFile != "") {
		return nil, exit.Usagef("--prometheus-bearer-token-file and --prometheus-basic-auth-*: give one way to authenticate, not both")
	}
	if (p.basicAuthUsername == "") != (p.basicAuthPasswordFile == "") {
		return nil, exit.Usagef("--prometheus-basic-auth-username and --prometheus-basic-auth-password-file go together: give both or neither")
	}
	if (p.certFile == "") != (p.keyFile == "") {
		return nil, exit.Usagef("--prometheus-cert-file and --prometheus-key-file go together: give both or neither")
	}
	cfg := config.DefaultHTTPClientConfig
	from := "the --prometheus-* flags"
	if p.configFile != "" {
		c, _, err := config.LoadHTTPConfigFile(p.configFile)
		if err != nil {
			return nil, exit.Usagef("--prometheus-config %s: %v: want a YAML http_config as prometheus.yml takes (https://prometheus.io/docs/prometheus/latest/configuration/configuration/#http_config)", p.configFile, err)
		}
		cfg = *c
		from = fmt.Sprintf("--prometheus-config %s with the --prometheus-* flags", p.configFile)
	}
	if p.bearerTokenFile != "" {
		cfg.BearerTokenFile = p.bearerTokenFile
	}
	if p.basicAuthUsername != "" {
		cfg.BasicAuth = &config.BasicAuth{Username: p.basicAuthUsername, PasswordFile: p.basicAuthPasswordFile}
	}
	if p.caFile != "" {
		cfg.TLSConfig.CAFile = p.caFile
	}
	if p.certFile != "" {
		cfg.TLSConfig.CertFile, cfg.TLSConfig.KeyFile = p.certFile, p.keyFile
	}
	if p.insecureSkipVerify {
		cfg.TLSConfig.InsecureSkipVerify = true
	}
	for _, h := range p.headers {
		name, value, ok := strings.Cut(h, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, exit.Usagef("--prometheus-header %q: want Name=Value, e.g. X-Scope-OrgID=team-a", h)
		}
		if cfg.HTTPHeaders == nil {
			cfg.HTTPHeaders = &config.Headers{}
		}
		if cfg.HTTPHeaders.Headers == nil {
			// http_headers: {} in --prometheus-config leaves no map.
			cfg.HTTPHeaders.Headers = map[string]config.Header{}
		}
		name = http.CanonicalHeaderKey(name)
		hdr := cfg.HTTPHeaders.Headers[name]
		hdr.Values = append(hdr.Values, value)
		cfg.HTTPHeaders.Headers[name] = hdr
	}
	if err := cfg.Validate(); err != nil {
		return nil, exit.Usagef("%s: %v%s", from, err, reservedHeaderHint(err))
	}
	if err := cfg.TLSConfig.Validate(); err != nil {
		return nil, exit.Usagef("%s: %v", from, err)
	}
	for _, f := range credentialFiles(&cfg) {
		fh, err := os.Open(f.path)
		if err != nil {
			return nil, exit.Usagef("the %s: %v", f.what, err)
		}
		_ = fh.Close() // opened only to see that it can be
	}
	// Building the client loads the CA and the client certificate.
	if _, err := prometheus.NewClient(url, &cfg, 0); err != nil {
		return nil, exit.Usagef("%s: %v", from, err)
	}
	return &cfg, nil
}

// reservedHeaderHint says which flag to use for a header Prometheus' client reserves.
func reservedHeaderHint(err error) string {
	if strings.Contains(err.Error(), `header "Authorization"`) {
		return ": use --prometheus-bearer-token-file or --prometheus-basic-auth-* instead"
	}
	return ""
}

type namedFile struct{ what, path string }

// credentialFiles are the files cfg reads at each request rather than
// when its client is built: a missing one would otherwise surface only at
// the first query.
func credentialFiles(cfg *config.HTTPClientConfig) []namedFile {
	var files []namedFile
	if a := cfg.Authorization; a != nil && a.CredentialsFile != "" {
		files = append(files, namedFile{"bearer token file", a.CredentialsFile})
	}
	if b := cfg.BasicAuth; b != nil {
		if b.UsernameFile != "" {
			files = append(files, namedFile{"basic auth username file", b.UsernameFile})
		}
		if b.PasswordFile != "" {
			files = append(files, namedFile{"basic auth password file", b.PasswordFile})
		}
	}
	if o := cfg.OAuth2; o != nil && o.ClientSecretFile != "" {
		files = append(files, namedFile{"oauth2 client secret file", o.ClientSecretFile})
	}
	return files
}

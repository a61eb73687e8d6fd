package prometheus

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/api"
	"github.com/prometheus/common/config"
)

// NewClient returns a client of the Prometheus HTTP API at address that
// connects and authenticates as cfg says: Prometheus' own http_config
// (bearer token, basic auth, OAuth 2.0, TLS with a CA and client
// certificates, extra headers, a proxy), so a managed or secured
// Prometheus is reached the way Prometheus itself reaches one. A nil cfg
// is config.DefaultHTTPClientConfig. Each request is bounded by timeout; 0
// leaves it unbounded.
//
// NewClient contacts nothing. It reads the CA and the client certificate
// cfg names, and fails if they do not load; credentials files are read at
// each request, so a rotated token is picked up without a restart.
func NewClient(address string, cfg *config.HTTPClientConfig, timeout time.Duration) (api.Client, error) {
	c := config.DefaultHTTPClientConfig
	if cfg != nil {
		c = *cfg
	}
	// Validate also moves a bearer_token_file into authorization, which the
	// round tripper reads.
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("prometheus client config: %w", err)
	}
	// NewClientFromConfig is NewRoundTripperFromConfig plus the
	// follow_redirects setting; the timeout is ours.
	hc, err := config.NewClientFromConfig(c, "prometheus")
	if err != nil {
		return nil, fmt.Errorf("prometheus client config: %w", err)
	}
	hc.Timeout = timeout
	client, err := api.NewClient(api.Config{Address: address, Client: hc})
	if err != nil {
		return nil, fmt.Errorf("prometheus URL %q: %w", address, err)
	}
	return client, nil
}

package cli

import (
	"net/url"
)

// validatePrometheusURL checks a Prometheus address before anything is
// contacted: the client library would take "::bad" or "localhost:9090"
// (a URL whose scheme is "localhost") and fail only at the first query,
// after the cluster had been read.
func validatePrometheusURL(flag, s string) error {
	const want = "want an http:// or https:// URL such as http://prometheus.monitoring:9090"
	u, err := url.Parse(s)
	if err != nil {
		return usageErrorf("%s %q: %s", flag, s, want)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErrorf("%s %q: %s", flag, s, want)
	}
	return nil
}

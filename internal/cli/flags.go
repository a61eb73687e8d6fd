package cli

import (
	"net/url"

	"github.com/spf13/pflag"

	"github.com/tailorhq/tailor/internal/price"
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

// priceFlags are the prices `tailor report` and the manager's dashboard
// put on requests: per CPU core-hour and per GiB-hour of memory. Unset,
// both are price.Example, and what they price says so.
type priceFlags struct {
	prices price.Prices
	given  int
}

func (p *priceFlags) bind(f *pflag.FlagSet) {
	f.Float64Var(&p.prices.CPUCoreHour, "price-cpu-core-hour", price.Example.CPUCoreHour,
		"what a CPU core of requests costs an hour, in your currency (default: an example figure, not a real price); a node's "+price.CPUKey+" annotation or label overrides it for its pods")
	f.Float64Var(&p.prices.MemoryGiBHour, "price-memory-gib-hour", price.Example.MemoryGiBHour,
		"what a GiB of memory requests costs an hour, in the same currency (default: an example figure, not a real price); a node's "+price.MemoryKey+" annotation or label overrides it for its pods")
}

// complete counts the price flags the command line set.
func (p *priceFlags) complete(f *pflag.FlagSet) {
	p.given = 0
	for _, name := range []string{"price-cpu-core-hour", "price-memory-gib-hour"} {
		if f.Changed(name) {
			p.given++
		}
	}
}

// example reports whether the prices are the examples.
func (p *priceFlags) example() bool { return p.given == 0 }

func (p *priceFlags) validate() error {
	if p.given == 1 {
		return usageErrorf("give both --price-cpu-core-hour and --price-memory-gib-hour (0 for a resource you do not pay for): one of them alone would be priced beside an example figure")
	}
	if err := p.prices.Validate(); err != nil {
		return usageErrorf("%v", err)
	}
	return nil
}

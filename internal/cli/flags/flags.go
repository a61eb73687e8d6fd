package flags

import (
	"net/url"

	"github.com/spf13/pflag"

	"github.com/tailorhq/tailor/internal/cli/exit"
	"github.com/tailorhq/tailor/internal/price"
)

// ValidatePrometheusURL checks a Prometheus address before anything is
// contacted: the client library would take "::bad" or "localhost:9090"
// (a URL whose scheme is "localhost") and fail only at the first query,
// after the cluster had been read.
func ValidatePrometheusURL(flag, s string) error {
	const want = "want an http:// or https:// URL such as http://prometheus.monitoring:9090"
	u, err := url.Parse(s)
	if err != nil {
		return exit.Usagef("%s %q: %s", flag, s, want)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return exit.Usagef("%s %q: %s", flag, s, want)
	}
	return nil
}

// Prices are the prices `tailor report` and the manager's dashboard
// put on requests: per CPU core-hour and per GiB-hour of memory. Unset,
// both are price.Example, and what they price says so.
type Prices struct {
	Prices price.Prices
	// Given counts the price flags the command line set.
	Given int
}

// Bind adds the flags to f.
func (p *Prices) Bind(f *pflag.FlagSet) {
	f.Float64Var(&p.Prices.CPUCoreHour, "price-cpu-core-hour", price.Example.CPUCoreHour,
		"what a CPU core of requests costs an hour, in your currency (default: an example figure, not a real price); a node's "+price.CPUKey+" annotation or label overrides it for its pods")
	f.Float64Var(&p.Prices.MemoryGiBHour, "price-memory-gib-hour", price.Example.MemoryGiBHour,
		"what a GiB of memory requests costs an hour, in the same currency (default: an example figure, not a real price); a node's "+price.MemoryKey+" annotation or label overrides it for its pods")
}

// Complete counts the price flags the command line set.
func (p *Prices) Complete(f *pflag.FlagSet) {
	p.Given = 0
	for _, name := range []string{"price-cpu-core-hour", "price-memory-gib-hour"} {
		if f.Changed(name) {
			p.Given++
		}
	}
}

// Example reports whether the prices are the examples.
func (p *Prices) Example() bool { return p.Given == 0 }

// Validate checks that both prices, or neither, were given, and that they
// are prices.
func (p *Prices) Validate() error {
	if p.Given == 1 {
		return exit.Usagef("give both --price-cpu-core-hour and --price-memory-gib-hour (0 for a resource you do not pay for): one of them alone would be priced beside an example figure")
	}
	if err := p.Prices.Validate(); err != nil {
		return exit.Usagef("%v", err)
	}
	return nil
}

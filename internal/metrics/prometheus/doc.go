// Package prometheus reads container usage from a Prometheus that scrapes the
// kubelet's cAdvisor endpoint. The queries are templates a policy may
// override, because every Prometheus installation labels its series a little
// differently; whatever they return is judged by metrics.Assemble, so NaN,
// empty, stale or mis-shaped answers hold containers instead of scaling them.
package prometheus

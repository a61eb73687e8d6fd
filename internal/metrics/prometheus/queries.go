package prometheus

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"text/template"
	"time"

	"github.com/prometheus/common/model"

	"github.com/tailorhq/tailor/internal/tenantquery"
)

// Queries are PromQL templates, one per figure. Each is rendered once per
// namespace with QueryData and must return an instant vector with one sample
// per container, labelled namespace, pod and container.
type Queries struct {
	// CPU: cores used, averaged over the window.
	CPU string
	// Memory: working set bytes.
	Memory string
	// Throttled: fraction of CFS periods throttled over the window. Optional:
	// empty means the source does not report throttling.
	Throttled string
	// Timestamp: when each container's data was scraped, in Unix seconds.
	// An instant query stamps every sample with the evaluation time, so
	// without this a series Prometheus stopped scraping minutes ago would look
	// fresh. Empty means: trust the evaluation time (as it is, too, for a
	// container this query has no answer for).
	Timestamp string
}

// QueryData is what a query template sees.
type QueryData struct {
	// Namespace of the pods asked for.
	Namespace string
	// Pods is an anchored-by-Prometheus regular expression matching exactly
	// the asked pods' names, for pod=~"{{.Pods}}".
	Pods string
	// Window is the rate window as a PromQL duration, e.g. 1m.
	Window string
}

// containerSelector picks the series of real containers of the asked pods:
// cAdvisor also exports the pod cgroup (container="") and the sandbox.
const containerSelector = `namespace="{{.Namespace}}", pod=~"{{.Pods}}", container!="", container!="POD"`

// DefaultQueries work against a Prometheus scraping the kubelet's
// /metrics/cadvisor with honor_labels, as hack/addons/prometheus.sh sets up.
func DefaultQueries() Queries {
	by := "by (namespace, pod, container)"
	return Queries{
		CPU:    "sum " + by + " (rate(container_cpu_usage_seconds_total{" + containerSelector + "}[{{.Window}}]))",
		Memory: "max " + by + " (container_memory_working_set_bytes{" + containerSelector + "})",
		Throttled: "sum " + by + " (rate(container_cpu_cfs_throttled_periods_total{" + containerSelector + "}[{{.Window}}]))" +
			" / sum " + by + " (rate(container_cpu_cfs_periods_total{" + containerSelector + "}[{{.Window}}]))",
		Timestamp: "max " + by + " (timestamp(container_memory_working_set_bytes{" + containerSelector + "}))",
	}
}

// WithOverrides returns q with every non-empty field of o in place of its own.
func (q Queries) WithOverrides(o Queries) Queries {
	for _, f := range []struct {
		dst *string
		src string
	}{
		{&q.CPU, o.CPU}, {&q.Memory, o.Memory}, {&q.Throttled, o.Throttled}, {&q.Timestamp, o.Timestamp},
	} {
		if f.src != "" {
			*f.dst = f.src
		}
	}
	return q
}

// compiled holds parsed templates; nil means the figure is not queried.
type compiled struct {
	cpu, memory, throttled, timestamp *query
}

// query is one figure's template, parsed.
type query struct {
	t *template.Template
	// confine is the namespace of the policy that wrote the template:
	// every query it renders is confined to it (tenantquery.Confine). ""
	// for the manager's own, which its operator wrote.
	confine string
}

// compile parses the templates of q. Those the policy of namespace wrote
// (the non-empty fields of policy) are confined to it.
func compile(q, policy Queries, namespace string) (compiled, error) {
	var c compiled
	for _, f := range []struct {
		name   string
		text   string
		dst    **query
		need   bool
		policy bool
	}{
		{"cpu", q.CPU, &c.cpu, true, policy.CPU != ""},
		{"memory", q.Memory, &c.memory, true, policy.Memory != ""},
		{"throttled", q.Throttled, &c.throttled, false, policy.Throttled != ""},
		{"timestamp", q.Timestamp, &c.timestamp, false, policy.Timestamp != ""},
	} {
		if strings.TrimSpace(f.text) == "" {
			if f.need {
				return compiled{}, fmt.Errorf("the %s query is empty; give a PromQL template", f.name)
			}
			continue
		}
		t, err := template.New(f.name).Option("missingkey=error").Parse(f.text)
		if err != nil {
			return compiled{}, fmt.Errorf("the %s query is not a valid template: %w", f.name, err)
		}
		cq := &query{t: t}
		sample := "ns"
		if f.policy {
			if namespace == "" {
				return compiled{}, fmt.Errorf("the %s query is a policy's, and no namespace was given to confine it to", f.name)
			}
			cq.confine, sample = namespace, namespace
		}
		// Render once now so a reference to an unknown field, or a
		// policy's query that could read another namespace, fails at
		// configuration time, not at the first sync.
		if _, err := render(cq, sample, []string{"pod"}, time.Minute); err != nil {
			return compiled{}, fmt.Errorf("the %s query: %w", f.name, err)
		}
		*f.dst = cq
	}
	return c, nil
}

// render is q for the named pods of namespace: what is sent to
// Prometheus, confined to the policy's namespace when q is a policy's.
func render(q *query, namespace string, pods []string, window time.Duration) (string, error) {
	var b bytes.Buffer
	if err := q.t.Execute(&b, QueryData{
		Namespace: promString(namespace),
		Pods:      podsRegex(pods),
		Window:    model.Duration(window).String(),
	}); err != nil {
		return "", fmt.Errorf("render template %s: %w", q.t.Name(), err)
	}
	if q.confine == "" {
		return b.String(), nil
	}
	return tenantquery.Confine(b.String(), q.confine)
}

// podsRegex is a regular expression matching exactly the named pods (which
// Prometheus anchors), written for the inside of a PromQL string:
// pod=~"{{.Pods}}". Pod names are DNS subdomains (letters, digits, '-',
// '.'): QuoteMeta escapes the dots, promString the escapes' backslashes.
func podsRegex(pods []string) string {
	quoted := make([]string, len(pods))
	for i, p := range pods {
		quoted[i] = regexp.QuoteMeta(p)
	}
	return promString(strings.Join(quoted, "|"))
}

// promString escapes s for the inside of a double-quoted PromQL string,
// whose escapes are Go's: a name Kubernetes validated needs none, but a
// backslash or a quote must not end the string or change the query.
func promString(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

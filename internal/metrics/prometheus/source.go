package prometheus

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"text/template"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/tailorhq/tailor/internal/metrics"
)

// Options configure a Source.
type Options struct {
	// Queries override DefaultQueries field by field.
	Queries Queries
	// Window is the rate window (default 1m: twelve 5s scrapes, enough for
	// rate() to survive a missed scrape).
	Window time.Duration
	// MaxAge is how old data may be before a container is held (default 2m).
	MaxAge time.Duration
	// Clock defaults to the real clock; tests give a fake one.
	Clock clock.PassiveClock
}

// Source reads usage from Prometheus with instant queries.
type Source struct {
	api promv1.API
	// text is the templates queries was compiled from, which a policy's
	// overrides replace field by field.
	text    Queries
	queries compiled
	window  time.Duration
	maxAge  time.Duration
	clock   clock.PassiveClock
}

var _ metrics.Templated = (*Source)(nil)

// New returns a Source querying the Prometheus client talks to. It fails on
// templates that do not parse or render, naming the query to fix.
func New(client api.Client, o Options) (*Source, error) {
	text := DefaultQueries().WithOverrides(o.Queries)
	c, err := compile(text)
	if err != nil {
		return nil, err
	}
	s := &Source{api: promv1.NewAPI(client), text: text, queries: c, window: o.Window, maxAge: o.MaxAge, clock: o.Clock}
	if s.window <= 0 {
		s.window = time.Minute
	}
	if s.maxAge <= 0 {
		s.maxAge = 2 * time.Minute
	}
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	return s, nil
}

func (s *Source) Name() string { return "prometheus" }

// WithQueries returns a Source for one policy's pods: s's client, window,
// age limit and clock, and s's queries with each non-empty field of o in
// their place. s is unchanged. It fails, naming the query, on a template
// that does not parse or render.
func (s *Source) WithQueries(o metrics.QueryOverrides) (metrics.Source, error) {
	text := s.text.WithOverrides(Queries(o))
	c, err := compile(text)
	if err != nil {
		return nil, err
	}
	d := *s
	d.text, d.queries = text, c
	return &d, nil
}

// Usage runs each query once per namespace of pods, at the current time.
func (s *Source) Usage(ctx context.Context, pods []*corev1.Pod) (metrics.Result, error) {
	now := s.clock.Now()
	readings := map[metrics.Key]metrics.Reading{}
	byNamespace := map[string][]string{}
	for _, p := range pods {
		byNamespace[p.Namespace] = append(byNamespace[p.Namespace], p.Name)
		for _, c := range metrics.Containers(p) {
			readings[metrics.Key{Namespace: p.Namespace, Pod: p.Name, Container: c}] = metrics.Reading{Window: s.window}
		}
	}
	for ns, names := range byNamespace {
		slices.Sort(names)
		if err := s.namespace(ctx, ns, names, now, readings); err != nil {
			return metrics.Result{}, err
		}
	}
	return metrics.Assemble(pods, readings, now, s.maxAge), nil
}

// column is one query's answer: a value per container, or why there is none.
type column struct {
	values map[metrics.Key]model.SamplePair
	reason metrics.Reason // for every container, when the whole answer is unusable
	detail string
	dupes  map[metrics.Key]bool
}

func (s *Source) namespace(ctx context.Context, ns string, pods []string, now time.Time, readings map[metrics.Key]metrics.Reading) error {
	cols := map[string]column{}
	for _, q := range []struct {
		name string
		tmpl *template.Template
	}{
		{"cpu", s.queries.cpu}, {"memory", s.queries.memory},
		{"throttled", s.queries.throttled}, {"timestamp", s.queries.timestamp},
	} {
		if q.tmpl == nil {
			continue
		}
		col, err := s.query(ctx, q.name, q.tmpl, ns, pods, now)
		if err != nil {
			return err
		}
		cols[q.name] = col
	}
	for key, r := range readings {
		if key.Namespace != ns {
			continue
		}
		var at *time.Time
		if ts, ok := cols["timestamp"]; ok && ts.reason == "" && !ts.dupes[key] {
			if v, ok := ts.values[key]; ok && !math.IsNaN(float64(v.Value)) && !math.IsInf(float64(v.Value), 0) {
				t := time.UnixMilli(int64(float64(v.Value) * 1000))
				at = &t
			}
		}
		r.CPU = cols["cpu"].figure(key, at, true)
		r.Memory = cols["memory"].figure(key, at, true)
		if col, ok := cols["throttled"]; ok {
			r.Throttled = col.figure(key, at, false)
		}
		readings[key] = r
	}
	return nil
}

// figure turns a column's entry for key into a Figure, dated by at when the
// timestamp query gave one. A missing optional figure (no throttling series:
// the container has no CPU limit) is not a problem.
func (c column) figure(key metrics.Key, at *time.Time, required bool) metrics.Figure {
	switch {
	case c.reason != "":
		return metrics.Unusable(c.reason, c.detail)
	case c.dupes[key]:
		return metrics.Unusable(metrics.ReasonMalformed, "the query returned more than one series for this container; aggregate by namespace, pod, container")
	}
	v, ok := c.values[key]
	if !ok {
		if !required {
			return metrics.Figure{}
		}
		return metrics.Unusable(metrics.ReasonMissing, "the query returned no series for this container")
	}
	t := v.Timestamp.Time()
	if at != nil {
		t = *at
	}
	return metrics.Value(float64(v.Value), t)
}

func (s *Source) query(ctx context.Context, name string, t *template.Template, ns string, pods []string, now time.Time) (column, error) {
	q, err := render(t, ns, pods, s.window)
	if err != nil {
		return column{}, err
	}
	val, warnings, err := s.api.Query(ctx, q, now)
	if err != nil {
		var perr *promv1.Error
		if errors.As(err, &perr) && perr.Type == promv1.ErrBadData {
			// The query itself is wrong (a user's override): hold the
			// namespace's containers and say which query, rather than
			// calling the whole source down.
			return column{reason: metrics.ReasonMalformed, detail: fmt.Sprintf("the %s query was refused: %s", name, perr.Msg)}, nil
		}
		return column{}, fmt.Errorf("prometheus %s query for namespace %s: %w", name, ns, err)
	}
	if len(warnings) > 0 {
		logr.FromContextOrDiscard(ctx).Info("prometheus query warnings", "query", name, "namespace", ns, "warnings", warnings)
	}
	vec, ok := val.(model.Vector)
	if !ok {
		return column{reason: metrics.ReasonMalformed, detail: fmt.Sprintf("the %s query returned a %s, want an instant vector", name, val.Type())}, nil
	}
	col := column{values: map[metrics.Key]model.SamplePair{}, dupes: map[metrics.Key]bool{}}
	for _, smp := range vec {
		key := metrics.Key{
			Namespace: string(smp.Metric["namespace"]),
			Pod:       string(smp.Metric["pod"]),
			Container: string(smp.Metric["container"]),
		}
		if key.Namespace == "" || key.Pod == "" || key.Container == "" {
			// Cannot be attributed to a container: the containers it was
			// meant for show up as missing, which says enough.
			continue
		}
		if _, seen := col.values[key]; seen {
			col.dupes[key] = true
		}
		col.values[key] = model.SamplePair{Timestamp: smp.Timestamp, Value: smp.Value}
	}
	return col, nil
}

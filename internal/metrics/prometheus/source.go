package prometheus

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/podcontainers"
)

// DefaultWindow is the rate window when Options leave it 0: twelve of the
// 5s scrapes Prometheus is usually given for cAdvisor, enough for rate() to
// survive a missed scrape.
const DefaultWindow = time.Minute

// Options configure a Source.
type Options struct {
	// Queries override DefaultQueries field by field.
	Queries Queries
	// Window is the rate window (0: DefaultWindow).
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
	// policy: the source runs a policy's queries (WithQueries), so the
	// requests one Usage sends are bounded (maxPolicyGroups).
	policy bool
}

// maxPolicyGroups bounds the evaluation groups of a source that runs a
// policy's queries, and so what one sync of the policy asks Prometheus:
// the timestamp query once, the three others once per group, at most 25
// requests. Containers measured within a twelfth of the window of each
// other share a group, so a workload whose nodes' cAdvisors stamp their
// samples within a 15s housekeeping interval makes three or four; only
// pods whose data is many intervals apart (some stale) make more, and then
// the groups are widened until there are this many, the rates of the
// older ones ending a little after their newest sample (see
// evaluationGroups) rather than a policy's queries being sent once per
// distinct time.
const maxPolicyGroups = 8

var _ metrics.Templated = (*Source)(nil)

// New returns a Source querying the Prometheus client talks to. It fails on
// templates that do not parse or render, naming the query to fix.
func New(client api.Client, o Options) (*Source, error) {
	text := DefaultQueries().WithOverrides(o.Queries)
	c, err := compile(text, Queries{}, "")
	if err != nil {
		return nil, err
	}
	s := &Source{api: promv1.NewAPI(client), text: text, queries: c, window: o.Window, maxAge: o.MaxAge, clock: o.Clock}
	if s.window <= 0 {
		s.window = DefaultWindow
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
// their place, confined to o.Namespace. s is unchanged. It fails, naming
// the query, on a template that does not parse or render, or that could
// read another namespace (wrapping tenantquery.ErrOutsideNamespace).
func (s *Source) WithQueries(o metrics.QueryOverrides) (metrics.Source, error) {
	own := Queries{CPU: o.CPU, Memory: o.Memory, Throttled: o.Throttled, Timestamp: o.Timestamp}
	text := s.text.WithOverrides(own)
	c, err := compile(text, own, o.Namespace)
	if err != nil {
		return nil, err
	}
	d := *s
	d.text, d.queries, d.policy = text, c, true
	return &d, nil
}

// Usage runs the timestamp query once per namespace of pods at the current
// time, then the other queries once per group of containers measured at
// about the same time, at that time (see evaluationGroups).
func (s *Source) Usage(ctx context.Context, pods []*corev1.Pod) (metrics.Result, error) {
	now := s.clock.Now()
	readings := map[metrics.Key]metrics.Reading{}
	started := map[metrics.Key]time.Time{}
	byNamespace := map[string][]string{}
	for _, p := range pods {
		byNamespace[p.Namespace] = append(byNamespace[p.Namespace], p.Name)
		for _, c := range podcontainers.Names(p) {
			key := metrics.Key{Namespace: p.Namespace, Pod: p.Name, Container: c}
			readings[key] = metrics.Reading{Window: s.window}
			if at, ok := runningSince(p, c); ok {
				started[key] = at
			}
		}
	}
	for ns, names := range byNamespace {
		slices.Sort(names)
		if err := s.namespace(ctx, ns, names, now, readings, started); err != nil {
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

func (s *Source) namespace(ctx context.Context, ns string, pods []string, now time.Time, readings map[metrics.Key]metrics.Reading, started map[metrics.Key]time.Time) error {
	var stamps column
	if s.queries.timestamp != nil {
		col, err := s.query(ctx, "timestamp", s.queries.timestamp, ns, pods, now)
		if err != nil {
			return err
		}
		stamps = col
	}
	var keys []metrics.Key
	measured := map[metrics.Key]time.Time{}
	for key := range readings {
		if key.Namespace != ns {
			continue
		}
		keys = append(keys, key)
		if at, ok := stamps.time(key); ok {
			measured[key] = at
		}
	}
	maxGroups := 0
	if s.policy {
		maxGroups = maxPolicyGroups
	}
	for _, g := range boundedGroups(keys, measured, now, s.window/12, maxGroups) {
		cols := map[string]column{}
		for _, q := range []struct {
			name string
			q    *query
		}{
			{"cpu", s.queries.cpu}, {"memory", s.queries.memory}, {"throttled", s.queries.throttled},
		} {
			if q.q == nil {
				continue
			}
			col, err := s.query(ctx, q.name, q.q, ns, g.pods, g.at)
			if err != nil {
				return err
			}
			cols[q.name] = col
		}
		for _, key := range g.keys {
			r := readings[key]
			var at *time.Time
			if t, ok := measured[key]; ok {
				at = &t
			}
			r.CPU = cols["cpu"].figure(key, at, true)
			r.Memory = cols["memory"].figure(key, at, true)
			if col, ok := cols["throttled"]; ok {
				r.Throttled = col.figure(key, at, false)
			}
			// Only a usable figure is young: a missing or invalid one says
			// more as it is.
			if since, ok := started[key]; ok && r.CPU.Reason == "" && g.at.Before(since.Add(2*s.window)) {
				r.CPU = metrics.Unusable(metrics.ReasonWarmingUp, fmt.Sprintf(
					"the container started at %s; its CPU rate counts once its series covers the whole %s window", since.UTC().Format(time.TimeOnly), model.Duration(s.window)))
				r.Throttled = metrics.Figure{}
			}
			readings[key] = r
		}
	}
	return nil
}

// runningSince is when container c of p last started running.
//
// Why the CPU of a young container waits two rate windows: a series that
// begins inside the window makes rate() extrapolate only part of the way to
// the window's start and still divide by the whole window, so it reads low
// (0.351 cores for a steady 0.422 on the dev cluster, with the window
// starting 28s after the container did). The series begins at cAdvisor's
// first sample of the container, which trailed its start by about 40s on a
// busy node; waiting one more window than the rate's covers that with room.
// A restarted container's new series is young the same way.
func runningSince(p *corev1.Pod, c string) (time.Time, bool) {
	for _, list := range [][]corev1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for _, st := range list {
			if st.Name == c && st.State.Running != nil && !st.State.Running.StartedAt.IsZero() {
				return st.State.Running.StartedAt.Time, true
			}
		}
	}
	return time.Time{}, false
}

// group is a set of containers whose queries are evaluated at one time.
type group struct {
	at    time.Time
	dated bool
	keys  []metrics.Key
	// pods are the names of the keys' pods, sorted, for the templates.
	pods []string
}

// evaluationGroups puts containers whose data was measured within align of
// each other in one group, evaluated at its newest measurement; containers
// with no measurement time are evaluated at now.
//
// Why not evaluate everything at now: cAdvisor stamps its samples with its
// own housekeeping time, 10-20s apart, so at now a series' newest sample is
// often more than one sample interval old. rate() then extrapolates only
// half an interval past it and divides by the whole window, which read a
// steady 0.43 cores as 0.32 on the dev cluster. Ending the window at the
// container's own newest sample (give or take align, a fraction of a sample
// interval) reads the rate over the window the reading is dated by.
func evaluationGroups(keys []metrics.Key, measured map[metrics.Key]time.Time, now time.Time, align time.Duration) []group {
	slices.SortFunc(keys, func(a, b metrics.Key) int {
		ta, oka := measured[a]
		tb, okb := measured[b]
		switch {
		case oka != okb:
			// Undated first, so they form one group at now.
			if !oka {
				return -1
			}
			return 1
		case oka && !ta.Equal(tb):
			return tb.Compare(ta)
		}
		return cmp.Compare(a.Pod+"/"+a.Container, b.Pod+"/"+b.Container)
	})
	var groups []group
	for _, key := range keys {
		at, dated := measured[key]
		if !dated {
			at = now
		}
		if n := len(groups); n == 0 || dated != groups[n-1].dated || groups[n-1].at.Sub(at) > align {
			groups = append(groups, group{at: at, dated: dated})
		}
		g := &groups[len(groups)-1]
		g.keys = append(g.keys, key)
	}
	for i := range groups {
		pods := map[string]bool{}
		for _, key := range groups[i].keys {
			pods[key.Pod] = true
		}
		groups[i].pods = slices.Sorted(maps.Keys(pods))
	}
	return groups
}

// boundedGroups are evaluationGroups, at most limit of them (0: no
// limit): align is doubled until they fit. The undated containers and
// the dated make two groups whatever align is, so a limit below two is
// two.
func boundedGroups(keys []metrics.Key, measured map[metrics.Key]time.Time, now time.Time, align time.Duration, limit int) []group {
	groups := evaluationGroups(keys, measured, now, align)
	if limit <= 0 {
		return groups
	}
	align = max(align, time.Millisecond)
	for len(groups) > max(limit, 2) {
		align *= 2
		groups = evaluationGroups(keys, measured, now, align)
	}
	return groups
}

// time is the measurement time the timestamp column gives key, if usable.
func (c column) time(key metrics.Key) (time.Time, bool) {
	if c.values == nil || c.reason != "" || c.dupes[key] {
		return time.Time{}, false
	}
	v, ok := c.values[key]
	if !ok || math.IsNaN(float64(v.Value)) || math.IsInf(float64(v.Value), 0) {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(float64(v.Value) * 1000)), true
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

func (s *Source) query(ctx context.Context, name string, tmpl *query, ns string, pods []string, now time.Time) (column, error) {
	q, err := render(tmpl, ns, pods, s.window)
	if err != nil {
		// compile rendered it once: only a template that fails on some
		// data, or a policy's query that no longer confines, gets here.
		// Nothing is sent; the namespace's containers are held.
		return column{reason: metrics.ReasonMalformed, detail: fmt.Sprintf("the %s query: %v", name, err)}, nil
	}
	val, warnings, err := s.api.Query(ctx, q, now)
	if err != nil {
		f := failed(ctx, err, "query", name, "namespace", ns)
		if f.Kind == BadQuery {
			// The query itself is wrong (a user's override): hold the
			// namespace's containers and say which query, rather than
			// calling the whole source down.
			return column{reason: metrics.ReasonMalformed, detail: fmt.Sprintf("the %s query: %s", name, f)}, nil
		}
		return column{}, fmt.Errorf("prometheus %s query for namespace %s: %w", name, ns, f)
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

package metrics

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/tailorhq/tailor/internal/jvm"
	corev1 "k8s.io/api/core/v1"
)

// Key names one container of one pod.
type Key struct {
	Namespace, Pod, Container string
}

func (k Key) String() string { return k.Namespace + "/" + k.Pod + "/" + k.Container }

// Usage is one container's measured usage.
type Usage struct {
	Key
	// Time is when the data was measured (the newest sample's own timestamp,
	// not when it was fetched), so staleness is judged on the measurement.
	Time time.Time
	// Window is the interval the CPU rate covers.
	Window time.Duration
	// CPU is the average usage over Window, in cores.
	CPU float64
	// Memory is the working set in bytes: what the kernel would not reclaim,
	// the figure the OOM killer and the kubelet's eviction look at.
	Memory float64
	// Throttled is the fraction of CFS periods in which the container was
	// throttled since ThrottledSince; nil when the source cannot tell (no CPU limit,
	// or a source that does not read cgroup CPU statistics).
	Throttled *float64
	// ThrottledSince is when the span Throttled covers began. It may differ
	// from the CPU's (Time minus Window), and what learns from both must
	// date each by its own: a fraction reaching back into a startup boost
	// was measured under a limit the container no longer has.
	ThrottledSince time.Time
	// MemoryGrowth is how fast the working set grew over the last few
	// seconds, in bytes a second, and MemoryPressure the share of time
	// the container's tasks stalled on memory (cgroup v2 PSI); nil when
	// the source does not read them (only the node agent does).
	MemoryGrowth, MemoryPressure *float64
	// MemoryAtRisk says the source saw the working set on course to reach
	// its limit before the next sync: the OOM killer may act first.
	MemoryAtRisk bool
	// JVM is what the node agent read of the container's JVM (agent
	// --jvm); nil when no source read one.
	JVM *jvm.Measured
}

// Metric names the figure a Problem is about.
type Metric string

const (
	MetricCPU        Metric = "cpu"
	MetricMemory     Metric = "memory"
	MetricThrottling Metric = "throttling"
	// MetricAll is for problems that concern the whole container, e.g. a pod
	// that is not running.
	MetricAll Metric = "all"
)

// Reason says why a figure cannot be used.
type Reason string

const (
	// ReasonMissing: the source has no sample for the container.
	ReasonMissing Reason = "Missing"
	// ReasonInvalid: the value is NaN, infinite or negative.
	ReasonInvalid Reason = "Invalid"
	// ReasonStale: the newest sample is older than the allowed age.
	ReasonStale Reason = "Stale"
	// ReasonMalformed: the source answered with something that is not the
	// expected shape (wrong result type, unparsable value, duplicate series).
	ReasonMalformed Reason = "Malformed"
	// ReasonWarmingUp: a rate needs two samples of a counter and there is
	// only one (first scrape, or the counter restarted).
	ReasonWarmingUp Reason = "WarmingUp"
	// ReasonNotRunning: the pod or container is not running, so it has no
	// usage worth recording.
	ReasonNotRunning Reason = "NotRunning"
	// ReasonTooLarge: the source's answer was larger than it may read (a
	// kubelet's metrics page over the cap), so it was refused unread.
	ReasonTooLarge Reason = "TooLarge"
)

// Problem is why one figure of one container is not in the Result.
type Problem struct {
	Key
	Metric Metric
	Reason Reason
	// Detail is for people: what the source said.
	Detail string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s %s %s: %s", p.Key, p.Metric, p.Reason, p.Detail)
}

// Result is a source's answer for a set of pods. A container is in Usage
// only when both its CPU and memory are usable; otherwise it is held and its
// Problems say why. Problems with throttling alone leave the Usage in place
// with Throttled nil.
type Result struct {
	Usage    map[Key]Usage
	Problems []Problem
}

// Source reads usage for pods. An error means the source as a whole is
// unreachable or unusable (every container is then held); anything narrower
// is a Problem in the Result.
type Source interface {
	Name() string
	Usage(ctx context.Context, pods []*corev1.Pod) (Result, error)
}

// QueryOverrides replace a source's query templates, one per figure, for
// the pods of one policy; an empty field keeps the source's own query. The
// language is the source's (PromQL for Prometheus).
type QueryOverrides struct {
	CPU, Memory, Throttled, Timestamp string
	// Namespace is the policy's: the queries are its author's, run with
	// the manager's credentials, so they read no other namespace.
	Namespace string
}

// Templated is a Source that reads usage with query templates a policy may
// override. Only some sources are (Prometheus); the controller type-asserts
// this, so the others need not know overrides exist.
type Templated interface {
	Source
	// WithQueries returns a Source that shares this one's connection and
	// settings and runs o in place of its own queries. It fails, naming
	// the query, on a template that cannot be used.
	WithQueries(o QueryOverrides) (Source, error)
}

// Problem records why key's metric is unusable.
func (r *Result) Problem(key Key, m Metric, reason Reason, detail string) {
	r.Problems = append(r.Problems, Problem{Key: key, Metric: m, Reason: reason, Detail: detail})
}

// ProblemsFor returns key's problems.
func (r *Result) ProblemsFor(key Key) []Problem {
	var out []Problem
	for _, p := range r.Problems {
		if p.Key == key {
			out = append(out, p)
		}
	}
	return out
}

// Sort orders Problems by key, metric and reason, so output and tests are
// stable whatever order a source answered in.
func (r *Result) Sort() {
	sort.SliceStable(r.Problems, func(i, j int) bool {
		a, b := r.Problems[i], r.Problems[j]
		if a.Key != b.Key {
			return a.Key.String() < b.Key.String()
		}
		if a.Metric != b.Metric {
			return a.Metric < b.Metric
		}
		return a.Reason < b.Reason
	})
}

// CheckValue returns ReasonInvalid for a value no usage can have, "" otherwise.
func CheckValue(v float64) Reason {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return ReasonInvalid
	}
	return ""
}

// Fresh reports whether a sample measured at t may still be used at now.
// A sample from the future (clock skew between the source and us) is fresh.
func Fresh(t, now time.Time, maxAge time.Duration) bool {
	return !t.IsZero() && now.Sub(t) <= maxAge
}

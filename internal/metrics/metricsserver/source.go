package metricsserver

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
	"k8s.io/utils/clock"

	"github.com/tailorhq/tailor/internal/metrics"
)

// Options configure a Source.
type Options struct {
	// MaxAge is how old a PodMetrics may be before its containers are held
	// (default 2m: metrics-server's default resolution is 60s).
	MaxAge time.Duration
	// Clock defaults to the real clock; tests give a fake one.
	Clock clock.PassiveClock
}

// Source reads PodMetrics, one list per namespace.
type Source struct {
	client metricsv1beta1.MetricsV1beta1Interface
	opts   Options
}

var _ metrics.Source = (*Source)(nil)

// New returns a Source over client (versioned.NewForConfig(cfg).MetricsV1beta1()).
// Its identity needs list on pods.metrics.k8s.io.
func New(client metricsv1beta1.MetricsV1beta1Interface, o Options) *Source {
	if o.MaxAge <= 0 {
		o.MaxAge = 2 * time.Minute
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return &Source{client: client, opts: o}
}

func (s *Source) Name() string { return "metrics-server" }

// Usage lists PodMetrics in each namespace of pods. Any failure to list is
// the source's error: metrics.k8s.io is one API, and when it fails for one
// namespace (APIService unavailable, forbidden) it is not to be trusted for
// the others either.
func (s *Source) Usage(ctx context.Context, pods []*corev1.Pod) (metrics.Result, error) {
	asked := map[string]map[string]bool{}
	for _, p := range pods {
		if asked[p.Namespace] == nil {
			asked[p.Namespace] = map[string]bool{}
		}
		asked[p.Namespace][p.Name] = true
	}
	namespaces := make([]string, 0, len(asked))
	for ns := range asked {
		namespaces = append(namespaces, ns)
	}
	slices.Sort(namespaces)

	readings := map[metrics.Key]metrics.Reading{}
	for _, ns := range namespaces {
		list, err := s.client.PodMetricses(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return metrics.Result{}, fmt.Errorf("list pods.metrics.k8s.io in namespace %s: %w", ns, err)
		}
		for _, pm := range list.Items {
			if !asked[ns][pm.Name] {
				continue
			}
			at := pm.Timestamp.Time
			for _, c := range pm.Containers {
				key := metrics.Key{Namespace: ns, Pod: pm.Name, Container: c.Name}
				r := metrics.Reading{Window: pm.Window.Duration}
				r.CPU = quantity(c.Usage, corev1.ResourceCPU, at)
				r.Memory = quantity(c.Usage, corev1.ResourceMemory, at)
				readings[key] = r
			}
		}
	}
	return metrics.Assemble(pods, readings, s.opts.Clock.Now(), s.opts.MaxAge), nil
}

// quantity reads one resource of a usage list: cores for CPU, bytes for
// memory (metrics-server's memory is the working set).
func quantity(usage corev1.ResourceList, name corev1.ResourceName, at time.Time) metrics.Figure {
	q, ok := usage[name]
	if !ok {
		return metrics.Unusable(metrics.ReasonMissing, "the PodMetrics has no "+string(name)+" usage for this container")
	}
	return metrics.Value(q.AsApproximateFloat64(), at)
}

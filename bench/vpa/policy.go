package vpa

import (
	"fmt"
	"time"

	"k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/config"
	"k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/logic"
	"k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/model"

	"github.com/tailorhq/tailor/internal/replay"
)

// feedInterval is how often VPA's recommender samples usage: its
// confidence formula counts samples as minutes, so a coarser trace sample is
// fed as that many one-minute samples of the same value.
const feedInterval = time.Minute

// maxFeed is the trace's own interval in feed intervals (300 s).
const maxFeed = 5

const container = "c"

// Policy applies VPA's target recommendation as the provisioned value,
// recomputed after every trace sample.
type Policy struct {
	rec   logic.PodResourceRecommender
	label string
	// OOMs feeds VPA an OOM kill whenever memory went over its target.
	// Off by default: the figures quoted for VPA in issue 4 were measured
	// from usage samples alone, and this reproduces them.
	OOMs bool
}

var _ replay.Policy = Policy{}

// New builds the recommender from config.DefaultRecommenderConfig() the way
// VPA's recommender binary does, including its global aggregation config.
func New() Policy {
	return NewWithMargin(config.DefaultRecommenderConfig().SafetyMarginFraction)
}

// NewWithMargin is New with another safety margin, for the trade-off
// curve: VPA's margin is the knob a user turns to trade cost for safety.
func NewWithMargin(margin float64) Policy {
	cfg := config.DefaultRecommenderConfig()
	cfg.SafetyMarginFraction = margin
	model.InitializeAggregationsConfig(model.NewAggregationsConfig(
		cfg.MemoryAggregationInterval,
		cfg.MemoryAggregationIntervalCount,
		cfg.MemoryHistogramDecayHalfLife,
		cfg.CpuHistogramDecayHalfLife,
		cfg.OOMBumpUpRatio,
		cfg.OOMMinBumpUp,
	))
	label := ""
	if margin != config.DefaultRecommenderConfig().SafetyMarginFraction {
		label = fmt.Sprintf(" margin=%g", margin)
	}
	return Policy{label: label, rec: logic.CreatePodResourceRecommender(logic.RecommendationConfig{
		SafetyMarginFraction:       cfg.SafetyMarginFraction,
		PodMinCPUMillicores:        cfg.PodMinCPUMillicores,
		PodMinMemoryMb:             cfg.PodMinMemoryMb,
		TargetCPUPercentile:        cfg.TargetCPUPercentile,
		LowerBoundCPUPercentile:    cfg.LowerBoundCPUPercentile,
		UpperBoundCPUPercentile:    cfg.UpperBoundCPUPercentile,
		ConfidenceIntervalCPU:      cfg.ConfidenceIntervalCPU,
		TargetMemoryPercentile:     cfg.TargetMemoryPercentile,
		LowerBoundMemoryPercentile: cfg.LowerBoundMemoryPercentile,
		UpperBoundMemoryPercentile: cfg.UpperBoundMemoryPercentile,
		ConfidenceIntervalMemory:   cfg.ConfidenceIntervalMemory,
	})}
}

// Name implements replay.Policy.
func (p Policy) Name() string {
	name := "vpa" + p.label
	if p.OOMs {
		name += "+oom"
	}
	return name
}

// ShapeBlind implements replay.ShapeBlind: VPA fed usage alone never
// reads what was in force; told of OOM kills, it does (at the limit).
func (p Policy) ShapeBlind() bool { return !p.OOMs }

// Start implements replay.Policy.
func (p Policy) Start(*replay.Series) replay.Provisioner {
	agg := model.NewAggregateContainerState()
	return &state{
		rec:   p.rec,
		agg:   model.ContainerNameToAggregateStateMap{container: agg},
		state: model.NewContainerState(model.Resources{}, agg),
		ooms:  p.OOMs,
	}
}

type state struct {
	rec   logic.PodResourceRecommender
	agg   model.ContainerNameToAggregateStateMap
	state *model.ContainerState
	cur   replay.Resources
	last  time.Time
	ooms  bool
}

func (s *state) Provisioned(time.Time) replay.Resources { return s.cur }

func (s *state) Observe(smp replay.Sample, prov replay.Resources) {
	// A trace sample is the mean over the interval since the previous
	// one; VPA would have seen one sample per minute of that interval.
	n := 1
	if !s.last.IsZero() {
		n = max(1, int(smp.Time.Sub(s.last)/feedInterval))
	}
	// A longer gap is the VM being off, not minutes of identical use.
	n = min(n, maxFeed)
	for i := n - 1; i >= 0; i-- {
		t := smp.Time.Add(-time.Duration(i) * feedInterval)
		s.state.AddSample(&model.ContainerUsageSample{MeasureStart: t, Usage: model.CPUAmountFromCores(smp.CPU), Resource: model.ResourceCPU})
		if smp.HasMemory() {
			s.state.AddSample(&model.ContainerUsageSample{MeasureStart: t, Usage: model.MemoryAmountFromBytes(smp.Memory), Resource: model.ResourceMemory})
		}
	}
	s.last = smp.Time
	// VPA's OOM observer would see the kill a sample over the limit is.
	if s.ooms && smp.HasMemory() && prov.MemoryLimit > 0 && smp.Memory > prov.MemoryLimit {
		_ = s.state.RecordOOM(smp.Time, model.MemoryAmountFromBytes(prov.MemoryLimit))
	}
	r := s.rec.GetRecommendedPodResources(s.agg)[container]
	s.cur = replay.Resources{
		CPU:    model.CoresFromCPUAmount(r.Target[model.ResourceCPU]),
		Memory: model.BytesFromMemoryAmount(r.Target[model.ResourceMemory]),
	}
}

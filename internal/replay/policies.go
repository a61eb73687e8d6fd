package replay

import (
	"fmt"
	"time"

	"github.com/tailorhq/tailor/internal/recommend"
)

// Double is the seeds' shell-operator rule: every Period, if CPU usage is
// over Threshold of the limit, double the limit; never lower it. Memory is
// left where the workload started. It starts from the capacity the trace
// says the workload had, or, when the trace does not say, from twice the
// first sample.
type Double struct {
	Period    time.Duration
	Threshold float64
}

// NewDouble returns the rule as the seeds shipped it.
func NewDouble() Double { return Double{Period: 2 * time.Minute, Threshold: 0.8} }

// Name implements Policy.
func (Double) Name() string { return "double" }

// ShapeBlind implements ShapeBlind: the rule looks at CPU usage only.
func (Double) ShapeBlind() bool { return true }

// Start implements Policy.
func (d Double) Start(s *Series) Provisioner {
	return &doubleState{rule: d, limit: Resources{CPU: s.CPUCapacity, Memory: s.MemoryCapacity}}
}

type doubleState struct {
	rule     Double
	limit    Resources
	lastTick time.Time
}

func (d *doubleState) Provisioned(time.Time) Resources { return d.limit }

func (d *doubleState) Observe(s Sample, _ Resources) {
	if d.limit.CPU == 0 {
		d.limit.CPU = 2 * s.CPU
	}
	if d.limit.Memory == 0 && s.HasMemory() {
		d.limit.Memory = 2 * s.Memory
	}
	if d.lastTick.IsZero() {
		d.lastTick = s.Time
		return
	}
	// The rule runs on its own clock; a sample stays the latest reading
	// for every tick until the next one arrives.
	for ; !d.lastTick.Add(d.rule.Period).After(s.Time); d.lastTick = d.lastTick.Add(d.rule.Period) {
		if s.CPU > d.rule.Threshold*d.limit.CPU {
			d.limit.CPU *= 2
		}
	}
}

// Oracle provisions exactly the next sample's usage: the bound no policy
// can beat, since it needs to know the future.
type Oracle struct{}

// Name implements Policy.
func (Oracle) Name() string { return "oracle" }

// ShapeBlind implements ShapeBlind: the oracle only looks ahead.
func (Oracle) ShapeBlind() bool { return true }

// Start implements Policy.
func (Oracle) Start(s *Series) Provisioner { return &oracleState{samples: s.Samples} }

type oracleState struct {
	samples []Sample
	next    int
	last    Resources
}

func (o *oracleState) Provisioned(now time.Time) Resources {
	for o.next < len(o.samples) && o.samples[o.next].Time.Before(now) {
		o.next++
	}
	if o.next < len(o.samples) && o.samples[o.next].Time.Equal(now) {
		s := o.samples[o.next]
		o.last.CPU = s.CPU
		if s.HasMemory() {
			o.last.Memory = s.Memory
		}
	}
	return o.last
}

func (o *oracleState) Observe(Sample, Resources) {}

// Tailor replays tailor's recommender: after each sample it records what a
// kubelet would have reported (an OOM kill when memory went over the limit,
// throttling when CPU did) and applies the recommendation's target.
type Tailor struct {
	Label string
	rec   *recommend.Recommender
}

// NewTailor validates cfg and returns the policy, named label.
func NewTailor(label string, cfg recommend.Config) (Tailor, error) {
	r, err := recommend.New(cfg)
	if err != nil {
		return Tailor{}, err
	}
	return Tailor{Label: label, rec: r}, nil
}

// Name implements Policy.
func (t Tailor) Name() string { return t.Label }

// Start implements Policy.
func (t Tailor) Start(*Series) Provisioner { return &tailorState{st: t.rec.NewState()} }

type tailorState struct {
	st  *recommend.State
	cur recommend.Resources
	// changed is when cur last changed, which a lowering must wait out.
	changed time.Time
}

func (t *tailorState) Provisioned(time.Time) Resources {
	return Resources{CPU: t.cur.CPU, Memory: t.cur.Memory, MemoryLimit: t.cur.MemoryLimit}
}

func (t *tailorState) Observe(s Sample, prov Resources) {
	mem := 0.0
	if s.HasMemory() {
		mem = s.Memory
		// The kernel kills at the limit; usage over the request alone is
		// not a kill.
		if prov.MemoryLimit > 0 && s.Memory > prov.MemoryLimit {
			t.st.RecordOOM(s.Time, prov.MemoryLimit)
		}
	}
	// A 5-minute mean over the limit means the demand the trace recorded
	// could not be served; the unserved share stands in for the throttled
	// share of periods, which the trace does not have.
	if prov.CPU > 0 && s.CPU > prov.CPU {
		t.st.RecordThrottling(s.Time, 1-prov.CPU/s.CPU, prov.CPU)
	}
	t.st.AddSample(recommend.Sample{CPU: s.CPU, Memory: mem}, s.Time)
	rec := t.st.Recommend(t.cur, t.changed, s.Time)
	next := recommend.Resources{CPU: rec.CPU.Target, Memory: rec.Memory.Target, MemoryLimit: rec.MemoryLimit.Target}
	if next != t.cur {
		t.cur, t.changed = next, s.Time
	}
}

// Hindsight provisions, through each Window (counted from the series'
// first sample), the highest usage that window will see. Like the oracle it
// looks ahead, but it resizes at most once per window: it is the bound for a
// policy that changes that often and is never over.
type Hindsight struct {
	Window time.Duration
}

// Name implements Policy.
func (h Hindsight) Name() string { return fmt.Sprintf("hindsight-%gh", h.Window.Hours()) }

// ShapeBlind implements ShapeBlind: hindsight only looks ahead.
func (Hindsight) ShapeBlind() bool { return true }

// Start implements Policy.
func (h Hindsight) Start(s *Series) Provisioner {
	st := &hindsightState{window: h.Window, samples: s.Samples}
	if len(s.Samples) > 0 {
		st.origin = s.Samples[0].Time
	}
	return st
}

type hindsightState struct {
	window  time.Duration
	samples []Sample
	origin  time.Time
	bucket  int64
	next    int
	cur     Resources
	started bool
}

func (h *hindsightState) Provisioned(now time.Time) Resources {
	k := int64(now.Sub(h.origin) / h.window)
	if h.started && k == h.bucket {
		return h.cur
	}
	h.started, h.bucket, h.cur = true, k, Resources{}
	end := h.origin.Add(time.Duration(k+1) * h.window)
	for h.next < len(h.samples) && h.samples[h.next].Time.Before(now) {
		h.next++
	}
	for _, s := range h.samples[h.next:] {
		if !s.Time.Before(end) {
			break
		}
		h.cur.CPU = max(h.cur.CPU, s.CPU)
		if s.HasMemory() {
			h.cur.Memory = max(h.cur.Memory, s.Memory)
		}
	}
	return h.cur
}

func (h *hindsightState) Observe(Sample, Resources) {}

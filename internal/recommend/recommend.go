package recommend

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Decision is what to do with one resource now.
type Decision int

const (
	// Hold keeps the current value.
	Hold Decision = iota
	// Raise applies a higher value at once.
	Raise
	// Lower applies a lower value; it only comes after Stabilization.
	Lower
)

func (d Decision) String() string {
	switch d {
	case Raise:
		return "raise"
	case Lower:
		return "lower"
	default:
		return "hold"
	}
}

// Sample is one usage measurement of a container.
type Sample struct {
	// CPU is the mean usage over the sample's interval, in cores.
	CPU float64
	// Memory is the working set in bytes; 0 (or NaN) means not measured,
	// since a running container never uses no memory.
	Memory float64
}

// Resources is a CPU (cores) and memory (bytes) pair.
type Resources struct {
	CPU float64
	// Memory is the memory request.
	Memory float64
	// MemoryLimit is the memory limit, read only with Config.MemorySplit
	// (0: not set).
	MemoryLimit float64
}

// Recommendation is the advice for both resources.
type Recommendation struct {
	CPU Advice
	// Memory is the advice for the memory request, and for the limit too
	// unless Config.MemorySplit.
	Memory Advice
	// MemoryLimit is the advice for the memory limit apart from the
	// request with Config.MemorySplit; the zero Advice otherwise.
	MemoryLimit Advice
}

// Advice is the advice for one resource.
type Advice struct {
	// Target is the value to have in force after this decision: the
	// current value when Decision is Hold.
	Target float64
	// Lower is the least that is safe now: below it the recommender raises.
	Lower float64
	// Upper is the most that is not wasteful: above it, for a whole
	// stabilization window, the recommender lowers.
	Upper float64
	// Decision says whether Target differs from the current value and why.
	Decision Decision

	why           resource
	waited        time.Duration
	stabilization time.Duration
	// early is the lowering the stabilization window alone holds back (0:
	// none), for Early.
	early float64
}

// Early is the lowering that only the stabilization window holds back now:
// the Target the advice would have once the window ended, with the step
// limit and bounds still applied. False when the advice is not such a hold.
// Room made for a pod of higher priority (internal/autoscale/room) may cut
// the window short; nothing else may.
func (a Advice) Early() (float64, bool) {
	return a.early, a.early > 0
}

// Needed is what the usage seen needs (its peak plus margin, within the
// configured range) whatever the current value, and false when nothing has
// been seen: the value a container goes back to from a temporary one.
func (a Advice) Needed() (float64, bool) {
	if a.why.empty {
		return 0, false
	}
	return a.why.needed(), true
}

// Recommender holds the validated configuration shared by many states.
type Recommender struct {
	cfg        Config
	cpuBucket  time.Duration
	memBucket  time.Duration
	stabBucket time.Duration
	// holdBuckets is MemoryHold in memory window buckets, and
	// requestBuckets MemoryRequestHold.
	holdBuckets    int64
	requestBuckets int64
}

// New validates cfg and returns a recommender.
func New(cfg Config) (*Recommender, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid recommender config: %w", err)
	}
	r := &Recommender{
		cfg:       cfg,
		cpuBucket: bucketFor(cfg.CPUWindow),
		memBucket: bucketFor(cfg.MemoryWindow),
	}
	if cfg.Stabilization > 0 {
		r.stabBucket = stabilizationBucket(cfg.Stabilization)
	}
	// The newest bucket may have only just begun: one more than a hold
	// spans covers it whole.
	if cfg.MemoryProfile {
		r.holdBuckets = min(int64((cfg.MemoryHold+r.memBucket-1)/r.memBucket)+1, peakBuckets)
	}
	if cfg.MemorySplit {
		r.requestBuckets = min(int64((cfg.MemoryRequestHold+r.memBucket-1)/r.memBucket)+1, peakBuckets)
	}
	return r, nil
}

// bucketFor cuts a window into peakBuckets-1 whole seconds, so the window
// is covered fully even when the newest bucket has only just begun.
func bucketFor(window time.Duration) time.Duration {
	return max(window/(peakBuckets-1), time.Second).Truncate(time.Second)
}

// stabilizationBucket is bucketFor rounded up instead of down: the window
// of needed values must reach back at least the whole stabilization window,
// or a value just inside it could be forgotten and lowering come early.
// Reaching back up to one bucket more only delays a lowering.
func stabilizationBucket(window time.Duration) time.Duration {
	per := (window + peakBuckets - 2) / (peakBuckets - 1)
	return max((per + time.Second - 1).Truncate(time.Second), time.Second)
}

// decay folds |delta| into a decaying mean whose weight halves every
// JitterHalfLife, whatever the sampling interval (elapsed seconds).
func (r *Recommender) decay(mean float32, delta float64, elapsed int64) float32 {
	keep := math.Exp2(-float64(elapsed) / r.cfg.JitterHalfLife.Seconds())
	return float32(keep*float64(mean) + (1-keep)*math.Abs(delta))
}

// Config returns the recommender's configuration.
func (r *Recommender) Config() Config { return r.cfg }

// Config returns the configuration the state learns under.
func (s *State) Config() Config { return s.r.cfg }

// NewState returns an empty per-container state.
func (r *Recommender) NewState() *State { return &State{r: r} }

// State is what the recommender remembers about one container, or about
// all the containers of one name in a workload's pods: a fixed 640 bytes
// (TestStateSize holds it under 1 KiB) whatever the number of samples.
type State struct {
	r   *Recommender
	cpu peakWindow
	mem peakWindow
	// memDaily is the memory profile by hour of day; empty unless
	// Config.MemoryProfile.
	memDaily dailyProfile
	// cpuNeed and memNeed are the highest needed value (what a raise would
	// set) computed at each event over the last stabilization window. A
	// lowering needs every one of them below the hysteresis band, which is
	// HPA's scale-down stabilization; keeping values rather than a clock is
	// what lets one state advise pods whose current values differ. Empty
	// when Stabilization is 0.
	cpuNeed peakWindow
	memNeed peakWindow
	// Unix seconds of the latest event of each kind; 0 for never.
	lastSample   int64
	lastThrottle int64
	lastOOM      int64
	throttled    float32
	lastCPU      float32
	lastMemory   float32
	// runStart is when (Unix nanoseconds) the current run of samples began:
	// the first sample, or the first after a gap longer than the state can
	// bridge (see gapLimit). Needed values are known only from then on.
	// lastRestart is when a restart was last recorded. Nanoseconds, because
	// whole seconds would let a window end up to a second early: a window
	// begun at 10.9s would count 25s at 35.0s.
	runStart    int64
	lastRestart int64
	// cpuJitter and memJitter are decaying means of the absolute change
	// between consecutive samples: how far the next sample may land from
	// the last, the part of the margin that scales with the workload's own
	// noise rather than with its size.
	cpuJitter float32
	memJitter float32
	lastMemAt int64
}

// gapLimit is the longest gap between samples after which the state still
// knows what was needed through it: the needed-value window still holds the
// values from before the gap, or the CPU peak, which every needed value
// includes, still holds the samples from before it. After a longer gap (a
// metrics outage, a manager down for hours and restored from a checkpoint)
// the first sample counts as the first ever for lowering.
func (r *Recommender) gapLimit() int64 {
	return int64(max(r.cfg.Stabilization, r.cfg.CPUWindow) / time.Second)
}

// AddSample records a usage sample measured at now.
func (s *State) AddSample(smp Sample, now time.Time) {
	sec := now.Unix()
	if smp.CPU >= 0 || smp.Memory > 0 {
		if prev := max(s.lastSample, s.lastMemAt); prev == 0 || sec-prev > s.r.gapLimit() {
			s.runStart = now.UnixNano()
		}
	}
	// A NaN or negative reading is a broken measurement, not usage; the
	// peak windows must never hold one.
	if smp.CPU >= 0 {
		if s.lastSample != 0 {
			s.cpuJitter = s.r.decay(s.cpuJitter, smp.CPU-float64(s.lastCPU), sec-s.lastSample)
		}
		s.cpu.add(smp.CPU, now, s.r.cpuBucket)
		s.lastCPU = float32(smp.CPU)
		s.lastSample = sec
	}
	if smp.Memory > 0 {
		if s.lastMemAt != 0 {
			s.memJitter = s.r.decay(s.memJitter, smp.Memory-float64(s.lastMemory), sec-s.lastMemAt)
		}
		s.mem.add(smp.Memory, now, s.r.memBucket)
		if s.r.cfg.MemoryProfile {
			s.memDaily.add(smp.Memory, now, s.r.cfg.ProfileFade)
		}
		s.lastMemory = float32(smp.Memory)
		s.lastMemAt = sec
	}
	s.recordNeeded(now)
}

// recordNeeded adds what each resource needs at now to the stabilization
// windows. It runs after every event that can change a needed value; in
// between, peaks only age out, so needed values only fall.
func (s *State) recordNeeded(now time.Time) {
	if s.r.stabBucket == 0 {
		return
	}
	cpu, mem, _ := s.resources(Resources{}, now)
	if !cpu.empty {
		s.cpuNeed.add(roundUp32(cpu.needed()), now, s.r.stabBucket)
	}
	if !mem.empty {
		s.memNeed.add(roundUp32(mem.needed()), now, s.r.stabBucket)
	}
}

// roundUp32 returns v as the nearest float32 at or above it, so a needed
// value stored in a bucket never reads below the band it was above.
func roundUp32(v float64) float64 {
	f := float32(v)
	if float64(f) < v {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	}
	return float64(f)
}

// RecordOOM records an OOM kill at now under memLimit bytes. The workload
// needed more than the limit, by an unknown amount, so the limit scaled by
// OOMBump is remembered as a memory peak for a whole memory window.
//
// A kill at or before the last one recorded is already in the state (a
// restarted controller sees the pods' last terminations again), and one
// older than a memory window before the newest event is history the window
// no longer holds: both are ignored, so neither counts twice nor as fresh.
func (s *State) RecordOOM(now time.Time, memLimit float64) {
	sec := now.Unix()
	if s.lastOOM != 0 && sec <= s.lastOOM {
		return
	}
	if latest := max(s.lastSample, s.lastMemAt, s.lastThrottle); latest != 0 && sec < latest-int64(s.r.cfg.MemoryWindow/time.Second) {
		return
	}
	s.mem.add(s.OOMPeak(memLimit), now, s.r.memBucket)
	if s.r.cfg.MemoryProfile {
		s.memDaily.add(s.OOMPeak(memLimit), now, s.r.cfg.ProfileFade)
	}
	s.lastOOM = sec
	s.recordNeeded(now)
}

// LastOOM is when the last OOM kill was recorded (zero: never).
func (s *State) LastOOM() time.Time {
	if s.lastOOM == 0 {
		return time.Time{}
	}
	return time.Unix(s.lastOOM, 0)
}

// RecordThrottling records the share of CFS periods throttled (throttled
// periods / periods) over the interval ending at now, under cpuLimit cores.
// A throttled container's usage cannot read above its limit, so from
// ThrottledAt on the limit scaled by a bump counts as the demand seen: from
// ThrottleBump when barely throttled to MaxThrottleBump when always.
func (s *State) RecordThrottling(now time.Time, throttledFraction, cpuLimit float64) {
	s.throttled = float32(throttledFraction)
	s.lastThrottle = now.Unix()
	if peak := s.ThrottlePeak(throttledFraction, cpuLimit); peak > 0 {
		s.cpu.add(peak, now, s.r.cpuBucket)
	}
	s.recordNeeded(now)
}

// ThrottlePeak is the CPU peak RecordThrottling records for a throttled
// share under cpuLimit cores; 0 for none.
func (s *State) ThrottlePeak(throttledFraction, cpuLimit float64) float64 {
	cfg := s.r.cfg
	if !(throttledFraction >= cfg.ThrottledAt) {
		return 0
	}
	bump := cfg.ThrottleBump + (cfg.MaxThrottleBump-cfg.ThrottleBump)*min(throttledFraction, 1)
	return cpuLimit * bump
}

// OOMPeak is the memory peak RecordOOM records for a kill under memLimit
// bytes.
func (s *State) OOMPeak(memLimit float64) float64 { return memLimit * s.r.cfg.OOMBump }

// maxRiskStep bounds the memory peak one risk records, as a multiple of
// the limit in force.
const maxRiskStep = 2

// RecordMemoryRisk records, at now, a working set of ws bytes growing by
// growth bytes a second, stalling on memory for a share pressure of the
// time (negative: not measured), under memLimit bytes (0: no limit). Two
// things count as a memory peak before any kill:
//
//   - a working set on course to reach its limit within MemoryLead: the
//     peak is where the course leads at MemoryLead (at most twice the
//     limit), since a sample a few seconds later may be the kill;
//   - stalls at or above MemoryPressureAt: the kernel is reclaiming hard to
//     stay under the limit, so the limit scaled by OOMBump, as for a kill.
//
// A source that cannot see either (cAdvisor's 10-20s samples) never
// calls it.
func (s *State) RecordMemoryRisk(now time.Time, ws, growth, pressure, memLimit float64) {
	peak := s.MemoryRiskPeak(ws, growth, pressure, memLimit)
	if peak <= 0 {
		return
	}
	cfg := s.r.cfg
	s.mem.add(peak, now, s.r.memBucket)
	if cfg.MemoryProfile {
		s.memDaily.add(peak, now, cfg.ProfileFade)
	}
	s.recordNeeded(now)
}

// MemoryRiskPeak is the memory peak RecordMemoryRisk records for its
// arguments; 0 for none.
func (s *State) MemoryRiskPeak(ws, growth, pressure, memLimit float64) float64 {
	cfg := s.r.cfg
	if memLimit <= 0 || math.IsNaN(ws) || math.IsNaN(growth) || math.IsInf(growth, 0) || math.IsNaN(pressure) {
		return 0
	}
	peak := 0.0
	if lead := cfg.MemoryLead.Seconds(); lead > 0 && growth > 0 && ws >= 0 && ws+growth*lead >= memLimit {
		// Where a ramp stops is unknown (a heap filling up at start stops
		// at its own maximum): one risk seen at most doubles the limit, and
		// a ramp that goes on is seen again and raised again.
		peak = min(ws+growth*lead, memLimit*maxRiskStep)
	}
	if cfg.MemoryPressureAt > 0 && pressure >= cfg.MemoryPressureAt {
		peak = max(peak, memLimit*cfg.OOMBump)
	}
	if peak <= 0 || math.IsInf(peak, 0) {
		return 0
	}
	return peak
}

// RecordRestart records a container restart at now. Usage right after a
// restart (cold caches, replayed queues) says little about the steady
// state, so lowering waits a fresh stabilization window.
func (s *State) RecordRestart(now time.Time) {
	s.lastRestart = max(s.lastRestart, now.UnixNano())
}

// Recommend decides, at now, what to do with the resources currently in
// force in one pod (0 for a resource not set), whose values last changed at
// lastChange (zero when unknown: long ago). It does not change s, so one
// state can advise every pod of a workload, each with its own current
// values.
//
// A raise comes at once. A lowering comes only when, over the whole last
// Stabilization, every needed value was below current*(1-Hysteresis), the
// pod's values have not changed, no restart was recorded and samples kept
// arriving; it then goes down by at most MaxStepDown.
func (s *State) Recommend(current Resources, lastChange time.Time, now time.Time) Recommendation {
	cpu, mem, lim := s.resources(current, now)
	rec := Recommendation{
		CPU:    s.decide(cpu, &s.cpuNeed, lastChange, now),
		Memory: s.decide(mem, &s.memNeed, lastChange, now),
	}
	if s.r.cfg.MemorySplit {
		// The tail falls only as a peak leaves the memory window, hours
		// apart: the limit needs no stabilization window of its own.
		rec.MemoryLimit = s.decide(lim, nil, lastChange, now)
		// A limit held or lowered must still hold the request advised.
		if l := &rec.MemoryLimit; l.Target < rec.Memory.Target {
			l.Target = rec.Memory.Target
			switch {
			case l.Target > lim.current:
				l.Decision = Raise
			case l.Target < lim.current:
				l.Decision = Lower
			default:
				l.Decision = Hold
			}
		}
	}
	return rec
}

// resources gathers both resources' inputs to decide at now: with
// Config.MemorySplit, mem is the memory request's and lim the limit's.
func (s *State) resources(current Resources, now time.Time) (cpu, mem, lim resource) {
	cfg := s.r.cfg
	sec := now.Unix()
	cpu = resource{name: "cpu", window: cfg.CPUWindow, current: current.CPU,
		peak: s.cpu.peak(now, s.r.cpuBucket), headroom: cfg.CPUHeadroom,
		margin: cfg.CPUJitterMargin * float64(s.cpuJitter), minMargin: cfg.CPUMinMargin, lo: cfg.MinCPU, hi: cfg.MaxCPU,
		empty: s.cpu.empty()}
	if s.lastThrottle != 0 && sec-s.lastThrottle <= int64(cfg.CPUWindow/time.Second) {
		cpu.throttled = s.throttled
	}
	mem = resource{name: "memory", window: cfg.MemoryWindow, current: current.Memory,
		peak: s.mem.peak(now, s.r.memBucket), headroom: cfg.MemoryHeadroom,
		margin: cfg.MemoryJitterMargin * float64(s.memJitter), minMargin: cfg.MemoryMinMargin, lo: cfg.MinMemory, hi: cfg.MaxMemory,
		empty: s.mem.empty()}
	if s.lastOOM != 0 && sec-s.lastOOM <= int64(cfg.MemoryWindow/time.Second) {
		mem.oom, mem.oomAgo = true, time.Duration(sec-s.lastOOM)*time.Second
	}
	if cfg.MemoryProfile && !mem.empty {
		mem.trust = min(float64(s.memDaily.days)/cfg.ProfileDays, 1)
		if cfg.ProfileDays == 0 {
			mem.trust = 1
		}
		if mem.trust > 0 {
			// The profile holds today's hours too: the hours just past
			// are in it whatever MemoryHold is.
			short := max(s.mem.recent(now, s.r.memBucket, s.r.holdBuckets),
				s.memDaily.predict(now, cfg.ProfileBehind, cfg.ProfileAhead))
			mem.peak = short + (1-mem.trust)*max(mem.peak-short, 0)
			mem.profiled, mem.hold = true, cfg.MemoryHold
		}
	}
	if cfg.MemorySplit {
		// The limit: the tail, the higher of the peak above and the whole
		// window's (told as the window's), with the margin.
		lim = mem
		lim.name, lim.current = "memory limit", current.MemoryLimit
		lim.peak, lim.window, lim.profiled = max(mem.peak, s.mem.peak(now, s.r.memBucket)), cfg.MemoryWindow, false
		// The request: the typical peak, the last hold's, no margin.
		mem.peak, mem.window, mem.profiled = s.mem.recent(now, s.r.memBucket, s.r.requestBuckets), cfg.MemoryRequestHold, false
		mem.headroom, mem.margin, mem.minMargin = cfg.MemoryRequestHeadroom, 0, 0
		if cfg.MemoryRequestTailShare > 0 && !mem.empty {
			mem.peak = max(mem.peak, cfg.MemoryRequestTailShare*lim.needed())
		}
		if !mem.empty {
			lim.atLeast = mem.needed()
		}
	}
	return cpu, mem, lim
}

// resource is one resource's inputs to decide.
type resource struct {
	name             string
	window           time.Duration
	current, peak    float64
	headroom, lo, hi float64
	// margin is added to the peak on top of the relative headroom; the
	// two together are at least minMargin.
	margin, minMargin float64
	empty             bool
	throttled         float32
	oom               bool
	oomAgo            time.Duration
	// profiled says peak is the daily profile's and the last hold's,
	// trusted as much as trust says, rather than the whole window's.
	profiled bool
	trust    float64
	hold     time.Duration
	// atLeast is a value the needed one never goes below: a memory
	// limit's request.
	atLeast float64
}

// needed is what the resource should have: the peak plus its margin,
// within the bounds.
func (r resource) needed() float64 {
	return max(clamp(r.peak+max(r.peak*r.headroom+r.margin, r.minMargin), r.lo, r.hi), r.atLeast)
}

// decide applies the asymmetric rules to one resource: raise at once when
// the needed value is above what is in force, lower only when it has been
// below the hysteresis band for the stabilization window (need holds the
// needed values over it; nil for none), and then by at most MaxStepDown.
func (s *State) decide(r resource, need *peakWindow, lastChange, now time.Time) Advice {
	cfg := s.r.cfg
	needed := r.needed()
	a := Advice{Target: r.current, Lower: needed, Upper: clamp(needed/(1-cfg.Hysteresis), r.lo, r.hi), why: r}
	switch {
	case r.empty:
		a.Lower, a.Upper = r.lo, r.hi
	case r.current <= 0:
		a.Decision, a.Target = Raise, needed
	case needed > r.current*(1+cfg.MinChange) || (needed > r.current && r.peak >= cfg.NearLimit*r.current):
		a.Decision, a.Target = Raise, needed
	case needed < r.current*(1-cfg.Hysteresis):
		if need != nil && cfg.Stabilization > 0 {
			a.waited = s.belowFor(need, r.current*(1-cfg.Hysteresis), lastChange, now)
			a.stabilization = cfg.Stabilization
			if a.waited < cfg.Stabilization {
				// Samples that stopped hold a lowering for want of
				// evidence, which no window cut short gives.
				if early := clamp(max(needed, r.current*(1-cfg.MaxStepDown)), r.lo, r.hi); early < r.current && s.sampling(now) {
					a.early = early
				}
				break
			}
		}
		a.Decision, a.Target = Lower, clamp(max(needed, r.current*(1-cfg.MaxStepDown)), r.lo, r.hi)
	}
	return a
}

// belowFor is how long lowering below band has been justified at now: how
// long every needed value in need has been below band, counted no earlier
// than the pod's last change, the last restart and the start of the
// current run of samples. It is 0 when samples stopped for longer than the
// state can bridge.
func (s *State) belowFor(need *peakWindow, band float64, lastChange, now time.Time) time.Duration {
	nowNano := now.UnixNano()
	if !s.sampling(now) {
		return 0
	}
	from := max(s.runStart, s.lastRestart)
	if !lastChange.IsZero() {
		from = max(from, lastChange.UnixNano())
	}
	// The newest bucket at or above the band is where the stabilization
	// window restarts; with none, the window's own reach is all it knows.
	since, ok := need.lastAtLeast(band, now, s.r.stabBucket)
	if !ok {
		since = need.oldest(now, s.r.stabBucket)
	}
	from = max(from, since*int64(time.Second))
	return max(time.Duration(nowNano-from), 0)
}

// sampling reports whether samples still arrive at now: the last came
// within the gap the state can bridge.
func (s *State) sampling(now time.Time) bool {
	last := max(s.lastSample, s.lastMemAt)
	return last != 0 && now.Unix()-last <= s.r.gapLimit()
}

// Reason says, for a person, why the advice is what it is, e.g. "cpu peak
// over last 30m is 0.92 cores, 0.92 of the 1 cores in force; throttled 18%
// of periods: raise to 1.2 cores". It is built on demand because most
// decisions are never read.
func (a Advice) Reason() string {
	r := a.why
	if r.empty {
		return r.name + ": no usage seen yet"
	}
	var b strings.Builder
	switch {
	case r.profiled && r.trust >= 1:
		fmt.Fprintf(&b, "%s peak over last %s and at this time of day on past days is %s", r.name, shortDuration(r.hold), r.amount(r.peak))
	case r.profiled:
		fmt.Fprintf(&b, "%s peak over last %s and at this time of day on past days, %.0f%% of the way to the peak over last %s, is %s",
			r.name, shortDuration(r.hold), 100*(1-r.trust), shortDuration(r.window), r.amount(r.peak))
	default:
		fmt.Fprintf(&b, "%s peak over last %s is %s", r.name, shortDuration(r.window), r.amount(r.peak))
	}
	if r.current > 0 {
		fmt.Fprintf(&b, ", %.2f of the %s in force", r.peak/r.current, r.amount(r.current))
	}
	if r.throttled > 0 {
		fmt.Fprintf(&b, "; throttled %.0f%% of periods", 100*r.throttled)
	}
	if r.oom {
		fmt.Fprintf(&b, "; OOM killed %s ago", shortDuration(r.oomAgo))
	}
	switch {
	case a.Decision == Raise && r.current <= 0:
		fmt.Fprintf(&b, "; nothing in force: set %s", r.amount(a.Target))
	case a.Decision == Raise:
		fmt.Fprintf(&b, ": raise to %s", r.amount(a.Target))
	case a.Decision == Lower:
		fmt.Fprintf(&b, "; below %s for %s: lower to %s", r.amount(a.Upper), shortDuration(a.waited), r.amount(a.Target))
	case a.stabilization > 0:
		fmt.Fprintf(&b, "; below %s for %s of the %s stabilization window: hold",
			r.amount(a.Upper), shortDuration(a.waited), shortDuration(a.stabilization))
	default:
		fmt.Fprintf(&b, "; within %s..%s: hold", r.amount(a.Lower), r.amount(a.Upper))
	}
	return b.String()
}

// amount prints a value of the resource in its usual unit.
func (r resource) amount(v float64) string {
	if r.name == "cpu" {
		return fmt.Sprintf("%.3g cores", v)
	}
	return fmt.Sprintf("%.0f MiB", v/(1<<20))
}

// shortDuration prints 30m0s as 30m and 48h0m0s as 48h.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func clamp(v, lo, hi float64) float64 {
	v = max(v, lo)
	if hi > 0 {
		v = min(v, hi)
	}
	return v
}

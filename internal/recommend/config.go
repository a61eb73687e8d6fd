package recommend

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Config holds the recommender's parameters. Per-policy overrides replace
// single fields; DefaultConfig documents why each default is what it is.
type Config struct {
	// CPUWindow is how far back the CPU peak looks. Short, because CPU
	// pressure is cheap to undo (throttling, not a kill) and a short window
	// follows a sustained change in one window, not in hours.
	CPUWindow time.Duration
	// CPUHeadroom is the fraction added above the CPU peak.
	CPUHeadroom float64
	// CPUJitterMargin is how many mean sample-to-sample changes are added
	// above the CPU peak: a steady workload gets a thin margin, a noisy one
	// a wide one, whatever their sizes.
	CPUJitterMargin float64
	// CPUMinMargin is the least margin above the CPU peak, in cores.
	CPUMinMargin float64
	// ThrottledAt is the share of CFS periods throttled at which the limit
	// counts as too low even if usage samples do not show it (a throttled
	// container's usage reads at most its limit).
	ThrottledAt float64
	// ThrottleBump scales the CPU limit in force when throttled; the result
	// is remembered as a CPU peak, since the real demand is unknown.
	ThrottleBump float64
	// MaxThrottleBump is the scale for a container throttled in every
	// period; between ThrottledAt and always throttled the bump grows from
	// ThrottleBump towards it, so the harder the throttling the bigger the
	// step up: a container starved of CPU should not climb in small steps.
	MaxThrottleBump float64

	// MemoryWindow is how far back the memory peak looks. Long, because a
	// memory sample over the limit is an OOM kill: the recommender must
	// remember the daily peak, not the last hour's.
	MemoryWindow time.Duration
	// MemoryHeadroom is the fraction added above the memory peak.
	MemoryHeadroom float64
	// MemoryJitterMargin is CPUJitterMargin for memory.
	MemoryJitterMargin float64
	// MemoryMinMargin is the least margin above the memory peak, in bytes.
	MemoryMinMargin float64
	// JitterHalfLife is how quickly the mean sample-to-sample change
	// forgets: long enough to remember a daily burst, short enough to
	// follow a workload that became steadier.
	JitterHalfLife time.Duration
	// MemoryLead is how far ahead a growing working set is projected:
	// one on course to reach its limit within MemoryLead counts as a
	// memory peak where the course leads, so the limit is raised before
	// the kernel kills at it. 0 is off. Only a source that measures the
	// growth (the node agent, sampling every second) feeds it.
	MemoryLead time.Duration
	// MemoryPressureAt is the share of time a container's tasks may stall
	// on memory (cgroup v2 PSI, from the node agent) before its limit is
	// raised as if it had been OOM killed at it. 0 is off.
	MemoryPressureAt float64
	// OOMBump scales the memory limit in force at an OOM kill; the result
	// is remembered as a memory peak for a whole MemoryWindow.
	OOMBump float64

	// MemoryProfile learns each container's memory by hour of day: the
	// highest working set seen in each hour on past days, fading by
	// ProfileFade a day. Once trusted, the memory peak is what the last
	// MemoryHold saw or what the profile holds for the hours around now,
	// whichever is higher, instead of the peak of the whole MemoryWindow:
	// lower between a daily peak's hours, raised ahead of them, and a
	// one-off peak held for MemoryHold, then only at its hour of the day
	// while it fades. Off, the MemoryWindow's peak is held as before.
	MemoryProfile bool
	// MemoryHold is how long a memory peak is held once the profile is
	// trusted (rounded up to the memory window's buckets, at most the
	// MemoryWindow).
	MemoryHold time.Duration
	// ProfileDays is how many days the profile must have seen to be fully
	// trusted. Trust grows with each day: with half as many, the peak used
	// is halfway between the profile's and the MemoryWindow's.
	ProfileDays float64
	// ProfileFade is the factor each hour's peak in the profile fades by a
	// day, unless that hour sees as much again.
	ProfileFade float64
	// ProfileBehind and ProfileAhead are how many hours before and after
	// now's hour of the day the profile looks: ahead raises memory before
	// a daily peak's hour comes, behind allows for its time of day moving.
	ProfileBehind int
	ProfileAhead  int

	// MemorySplit sizes the memory request and the memory limit apart:
	// the request is what the scheduler reserves, the limit what the
	// kernel allows before it kills. The request (Recommendation.Memory)
	// is sized from the typical peak: the peak of the last
	// MemoryRequestHold plus MemoryRequestHeadroom, with no least margin.
	// The limit (Recommendation.MemoryLimit) is sized from the tail: the
	// higher of the memory peak above (the daily profile's around now and
	// the last MemoryHold's, once the profile is trusted) and the whole
	// MemoryWindow's, plus the margin (MemoryHeadroom, MemoryJitterMargin,
	// MemoryMinMargin), and never below the request. On in DefaultConfig;
	// off, one value sizes the request, the controller derives the limit
	// from it at the pod's ratio, and Recommendation.MemoryLimit is empty
	// (tailor before issue 26).
	MemorySplit bool
	// MemoryRequestHold is how far back the request's peak looks with
	// MemorySplit (rounded up to the memory window's buckets, at most the
	// MemoryWindow).
	MemoryRequestHold time.Duration
	// MemoryRequestHeadroom is the fraction added above that peak.
	MemoryRequestHeadroom float64
	// MemoryRequestTailShare, with MemorySplit, keeps the request at least
	// this share of the limit's needed value (the tail): a workload whose
	// tail is far above its typical peak has the most to push onto its
	// node's neighbours when the tail comes back. 0 is off.
	MemoryRequestTailShare float64

	// Stabilization is how long a lower recommendation must hold, without
	// interruption, before it is applied.
	Stabilization time.Duration
	// Hysteresis is the band below the current value that a recommendation
	// must leave before lowering is considered: current*(1-Hysteresis).
	Hysteresis float64
	// MaxStepDown bounds one lowering to this fraction of the current value.
	MaxStepDown float64
	// MinChange is the smallest relative raise worth a resize, unless the
	// peak is already within NearLimit of the current value.
	MinChange float64
	// NearLimit is the share of the current value a peak must reach to
	// raise whatever MinChange says: memory approaching its limit is one
	// allocation away from an OOM kill.
	NearLimit float64

	// MinCPU, MaxCPU (cores) and MinMemory, MaxMemory (bytes) bound every
	// recommendation; a maximum of 0 means unbounded.
	MinCPU    float64
	MaxCPU    float64
	MinMemory float64
	MaxMemory float64
}

// DefaultConfig returns the parameters a user gets without overrides; they
// are the ones measured in docs/benchmark.md.
func DefaultConfig() Config {
	return Config{
		// CPU: the peak of the last 30 minutes plus 30 millicores. Half an
		// hour holds a batch job's level through its pauses; CPU short of
		// its limit is throttled, not killed, and throttling raises at
		// once (ThrottledAt, ThrottleBump), so no relative headroom is
		// added: it would cost most on the big workloads that carry the
		// cores, while the absolute margin protects the many small ones.
		CPUWindow:    30 * time.Minute,
		CPUHeadroom:  0,
		CPUMinMargin: 0.03,
		ThrottledAt:  0.05,
		ThrottleBump: 1.2,
		// Throttled in every period, the demand may be any multiple of the
		// limit: doubling reaches it in a few resizes.
		MaxThrottleBump: 2,
		// Memory: the peak of the last two days plus 5%, plus twice the
		// mean sample-to-sample change, and never less than 256 MiB above
		// the peak. A sample over the limit is an OOM kill, so the peak is
		// remembered for two days (a daily job whose peak comes late is
		// still covered); the noise term widens the margin only for
		// workloads that jump; the 256 MiB floor is VPA's own 250 MB pod
		// minimum in spirit, cheap for small containers and what keeps
		// them from being killed by a small jump.
		MemoryWindow:       48 * time.Hour,
		MemoryHeadroom:     0.05,
		MemoryJitterMargin: 2,
		MemoryMinMargin:    256 << 20,
		JitterHalfLife:     6 * time.Hour,
		// VPA's own bump after an OOM kill.
		OOMBump: 1.2,
		// Ten seconds: the agent's sample, its push, a sync and the
		// kubelet applying the resize take 2-3s here, and a ramp that
		// does not stop must not need a resize every sample.
		MemoryLead: 10 * time.Second,
		// Stalled a tenth of the time: reclaim is already costing the
		// workload, and the next step is the OOM killer.
		MemoryPressureAt: 0.1,
		// Memory, once three days are seen: the peak of the last 4 hours
		// or what the same hours of the day (one either side of now's)
		// reached on past days, fading by 2% a day. A daily peak is
		// raised for an hour ahead and held through its hours; memory is
		// lowered between them; a one-off peak is held 4 hours and then
		// only at its hour of the day, for weeks. Measured on the traces
		// tuned on one half of the VMs and scored on the other
		// (docs/benchmark.md): memory 5.69x -> 5.45x provisioned/used at
		// fewer samples over, p90 across series 0.18% -> 0.14%, about 4
		// memory changes a day. The fade is what matters most: 0.95 a day
		// costs as much as the 48-hour window for the same kills.
		MemoryProfile: true,
		MemoryHold:    4 * time.Hour,
		ProfileDays:   3,
		ProfileFade:   0.98,
		ProfileBehind: 1,
		ProfileAhead:  1,
		// Lowering waits 15 minutes of a recommendation at least 20%
		// below what is in force, and then goes down at most by 75%: about
		// 9 CPU changes and under 1 memory change per day on the traces,
		// under the 12 a day a workload can take without resize churn.
		Stabilization: 15 * time.Minute,
		Hysteresis:    0.2,
		MaxStepDown:   0.75,
		MinChange:     0.05,
		NearLimit:     0.95,
		// 10 millicores and 16 MiB: the smallest values worth setting on
		// a container; below them rounding, not usage, decides.
		MinCPU:    0.01,
		MinMemory: 16 << 20,
		// Memory sized as Kubernetes charges it (issue 26): the request,
		// which the scheduler reserves, from the last day's peak with no
		// margin; the limit, where the kernel kills, from the tail above.
		// On held-out halves of the traces (tuned on one half by time or
		// by VM, scored on the other) it reserved 0.66-0.68x VPA's
		// requests with 27-56% of its OOM kills and no node-pressure
		// eviction on 64 GiB nodes (docs/benchmark.md). A day: 8 hours
		// cost evictions where VPA had none; 48 hours gave back a third of
		// the saving.
		MemorySplit:       true,
		MemoryRequestHold: 24 * time.Hour,
	}
}

// Validate reports every parameter that is out of range.
func (c Config) Validate() error {
	var errs []error
	positive := func(name string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %v", name, d))
		}
	}
	fraction := func(name string, v, lo, hi float64) {
		if math.IsNaN(v) || v < lo || v > hi {
			errs = append(errs, fmt.Errorf("%s must be within [%g, %g], got %g", name, lo, hi, v))
		}
	}
	bounds := func(name string, lo, hi float64) {
		if math.IsNaN(lo) || lo < 0 || math.IsNaN(hi) || hi < 0 {
			errs = append(errs, fmt.Errorf("%s bounds must not be negative, got min %g max %g", name, lo, hi))
		} else if hi != 0 && hi < lo {
			errs = append(errs, fmt.Errorf("%s maximum %g is below its minimum %g", name, hi, lo))
		}
	}
	positive("cpuWindow", c.CPUWindow)
	positive("memoryWindow", c.MemoryWindow)
	positive("jitterHalfLife", c.JitterHalfLife)
	fraction("cpuJitterMargin", c.CPUJitterMargin, 0, 100)
	if math.IsNaN(c.CPUMinMargin) || c.CPUMinMargin < 0 || math.IsNaN(c.MemoryMinMargin) || c.MemoryMinMargin < 0 {
		errs = append(errs, fmt.Errorf("cpuMinMargin and memoryMinMargin must not be negative, got %g and %g", c.CPUMinMargin, c.MemoryMinMargin))
	}
	fraction("memoryJitterMargin", c.MemoryJitterMargin, 0, 100)
	if c.Stabilization < 0 {
		errs = append(errs, fmt.Errorf("stabilization must not be negative, got %v", c.Stabilization))
	}
	fraction("cpuHeadroom", c.CPUHeadroom, 0, 10)
	fraction("memoryHeadroom", c.MemoryHeadroom, 0, 10)
	fraction("throttledAt", c.ThrottledAt, 0, 1)
	fraction("oomBump", c.OOMBump, 1, 10)
	fraction("memoryPressureAt", c.MemoryPressureAt, 0, 1)
	if c.MemoryLead < 0 {
		errs = append(errs, fmt.Errorf("memoryLead must not be negative, got %v", c.MemoryLead))
	}
	fraction("throttleBump", c.ThrottleBump, 1, 10)
	fraction("maxThrottleBump", c.MaxThrottleBump, 1, 10)
	if c.MaxThrottleBump < c.ThrottleBump {
		errs = append(errs, fmt.Errorf("maxThrottleBump (%v) must not be below throttleBump (%v)", c.MaxThrottleBump, c.ThrottleBump))
	}
	if c.MemoryProfile {
		positive("memoryHold", c.MemoryHold)
		fraction("profileDays", c.ProfileDays, 0, 1000)
		fraction("profileFade", c.ProfileFade, 0, 1)
		if c.ProfileBehind < 0 || c.ProfileBehind > 12 || c.ProfileAhead < 0 || c.ProfileAhead > 12 {
			errs = append(errs, fmt.Errorf("profileBehind and profileAhead must be within [0, 12] hours, got %d and %d", c.ProfileBehind, c.ProfileAhead))
		}
	}
	if c.MemorySplit {
		positive("memoryRequestHold", c.MemoryRequestHold)
		fraction("memoryRequestHeadroom", c.MemoryRequestHeadroom, 0, 10)
		fraction("memoryRequestTailShare", c.MemoryRequestTailShare, 0, 1)
	}
	fraction("hysteresis", c.Hysteresis, 0, 0.99)
	fraction("maxStepDown", c.MaxStepDown, 0.01, 1)
	fraction("minChange", c.MinChange, 0, 10)
	fraction("nearLimit", c.NearLimit, 0, 1)
	bounds("cpu", c.MinCPU, c.MaxCPU)
	bounds("memory", c.MinMemory, c.MaxMemory)
	return errors.Join(errs...)
}

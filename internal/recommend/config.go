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
	// ThrottledAt is the share of CFS periods throttled at which the limit
	// counts as too low even if usage samples do not show it (a throttled
	// container's usage reads at most its limit).
	ThrottledAt float64

	// MemoryWindow is how far back the memory peak looks. Long, because a
	// memory sample over the limit is an OOM kill: the recommender must
	// remember the daily peak, not the last hour's.
	MemoryWindow time.Duration
	// MemoryHeadroom is the fraction added above the memory peak.
	MemoryHeadroom float64
	// MemoryJitterMargin is CPUJitterMargin for memory.
	MemoryJitterMargin float64
	// JitterHalfLife is how quickly the mean sample-to-sample change
	// forgets: long enough to remember a daily burst, short enough to
	// follow a workload that became steadier.
	JitterHalfLife time.Duration
	// OOMBump scales the memory limit in force at an OOM kill; the result
	// is remembered as a memory peak for a whole MemoryWindow.
	OOMBump float64

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
		// An hour holds the peak of a batch burst until the next one on
		// most of the measured workloads, and lets CPU follow a sustained
		// drop within 1h30m (window plus stabilization).
		CPUWindow:   time.Hour,
		CPUHeadroom: 0.2,
		ThrottledAt: 0.05,
		// Two days: memory that peaks once a day (backups, batch jobs)
		// must still be covered when yesterday's peak comes late.
		MemoryWindow: 48 * time.Hour,
		// Memory's margin is mostly the workload's own noise (4 mean
		// sample-to-sample changes) plus a thin 5%: a fixed 20% over the
		// peak wasted more on steady VMs and still missed noisy ones.
		MemoryHeadroom:     0.05,
		MemoryJitterMargin: 4,
		JitterHalfLife:     6 * time.Hour,
		// VPA's own bump after an OOM kill.
		OOMBump: 1.2,
		// Lowering waits half an hour, leaves a 10% band, and goes down at
		// most by half: about 8 CPU changes per day on the traces, under
		// the 12 a day a workload can take without resize churn.
		Stabilization: 30 * time.Minute,
		Hysteresis:    0.1,
		MaxStepDown:   0.5,
		MinChange:     0.05,
		NearLimit:     0.95,
		// 10 millicores and 16 MiB: the smallest values worth setting on
		// a container; below them rounding, not usage, decides.
		MinCPU:    0.01,
		MinMemory: 16 << 20,
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
	fraction("memoryJitterMargin", c.MemoryJitterMargin, 0, 100)
	if c.Stabilization < 0 {
		errs = append(errs, fmt.Errorf("stabilization must not be negative, got %v", c.Stabilization))
	}
	fraction("cpuHeadroom", c.CPUHeadroom, 0, 10)
	fraction("memoryHeadroom", c.MemoryHeadroom, 0, 10)
	fraction("throttledAt", c.ThrottledAt, 0, 1)
	fraction("oomBump", c.OOMBump, 1, 10)
	fraction("hysteresis", c.Hysteresis, 0, 0.99)
	fraction("maxStepDown", c.MaxStepDown, 0.01, 1)
	fraction("minChange", c.MinChange, 0, 10)
	fraction("nearLimit", c.NearLimit, 0, 1)
	bounds("cpu", c.MinCPU, c.MaxCPU)
	bounds("memory", c.MinMemory, c.MaxMemory)
	return errors.Join(errs...)
}

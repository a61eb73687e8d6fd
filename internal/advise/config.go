package advise

import (
	"fmt"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/recommend"
)

// Config applies a policy's overrides for one container to the
// manager's recommender configuration: the container's recommender fields,
// and the scale-down stabilization window, which is the recommender's.
func Config(base recommend.Config, spec *v1alpha1.TailorPolicySpec, container string) (recommend.Config, error) {
	cfg := base
	pol, err := spec.PolicyFor(container)
	if err != nil {
		return cfg, err
	}
	if o := pol.Recommender; o != nil {
		if o.CPUWindow != nil {
			cfg.CPUWindow = o.CPUWindow.Duration
		}
		if o.MemoryWindow != nil {
			// A policy that names a memory window asks for the memory peak
			// to be held that long; the daily memory profile, which holds
			// a peak 4 hours once trusted, would not honour that.
			cfg.MemoryWindow = o.MemoryWindow.Duration
			cfg.MemoryProfile = false
		}
		if o.JitterHalfLife != nil {
			cfg.JitterHalfLife = o.JitterHalfLife.Duration
		}
		if o.CPUHeadroomPercent != nil {
			cfg.CPUHeadroom = float64(*o.CPUHeadroomPercent) / 100
		}
		if o.MemoryHeadroomPercent != nil {
			cfg.MemoryHeadroom = float64(*o.MemoryHeadroomPercent) / 100
		}
	}
	if b := spec.Behavior; b != nil && b.ScaleDown != nil && b.ScaleDown.StabilizationWindow != nil {
		cfg.Stabilization = b.ScaleDown.StabilizationWindow.Duration
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("container %q: recommender settings: %w", container, err)
	}
	return cfg, nil
}

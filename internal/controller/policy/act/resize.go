package act

import "github.com/tailorhq/tailor/internal/resize"

// restarts reports whether applying plan restarts a container.
func restarts(plan *resize.Result) bool {
	if plan == nil {
		return false
	}
	for _, c := range plan.Containers {
		if c.Restart {
			return true
		}
	}
	return false
}

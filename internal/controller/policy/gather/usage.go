package gather

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tailorhq/tailor/internal/metrics"
)

// HeldFor says which containers have no usable figures and why, counted by
// reason with the first problem; "" when all have (warming up, the first
// read of a counter, and not running are not a source's fault).
func HeldFor(problems []metrics.Problem) string {
	byReason := map[metrics.Reason]int{}
	containers := map[metrics.Key]bool{}
	var first *metrics.Problem
	for i, p := range problems {
		if p.Reason == metrics.ReasonWarmingUp || p.Reason == metrics.ReasonNotRunning {
			continue
		}
		byReason[p.Reason]++
		containers[p.Key] = true
		// The least by name, not the first in order: sources list
		// problems in map order, and status must not change with it.
		if first == nil || p.String() < first.String() {
			first = &problems[i]
		}
	}
	if first == nil {
		return ""
	}
	reasons := make([]string, 0, len(byReason))
	for r, n := range byReason {
		reasons = append(reasons, fmt.Sprintf("%s %d", r, n))
	}
	sort.Strings(reasons)
	return fmt.Sprintf("%d container(s) without usable figures (%s), first %s", len(containers), strings.Join(reasons, ", "), first.String())
}

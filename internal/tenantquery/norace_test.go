//go:build !race

package tenantquery

const raceDetector = false

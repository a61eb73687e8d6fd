//go:build !race

package recommend

const raceDetector = false

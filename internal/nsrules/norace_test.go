//go:build !race

package nsrules

const raceDetector = false

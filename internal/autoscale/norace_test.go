//go:build !race

package autoscale_test

const raceDetector = false

//go:build race

package autoscale_test

// raceDetector: this test binary was built with -race, which runs the pure
// decision five to ten times slower; runCases draws fewer cases then (see
// propertyCases).
const raceDetector = true

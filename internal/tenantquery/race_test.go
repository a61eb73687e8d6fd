//go:build race

package tenantquery

// raceDetector: this test binary was built with -race, which parses five to
// ten times slower; the property test draws a fifth of its queries then.
const raceDetector = true

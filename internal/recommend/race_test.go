//go:build race

package recommend

// raceDetector: this test binary was built with -race, which runs the
// generated cases five to ten times slower; the property tests draw a fifth
// of them then, and make check runs them whole without it (hack/check.sh,
// step properties).
const raceDetector = true

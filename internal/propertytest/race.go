//go:build race

package propertytest

// Race: this test binary was built with -race, which runs the pure
// decision five to ten times slower; Run draws fewer cases then (see
// Cases).
const Race = true

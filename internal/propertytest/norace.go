//go:build !race

package propertytest

// Race: this test binary was built without -race (see race.go).
const Race = false

//go:build race

package propertytest

// Race: this test binary was built with -race, which runs pure code five
// to ten times slower; Run draws fewer cases then (see Cases), and the
// property tests that draw their own (nsrules', the recommender's, the
// tenant query's) read it to do likewise.
const Race = true

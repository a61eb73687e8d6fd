// Package propertytest runs the decision's property tests the way the gate
// needs them run: the same cases every run unless TAILOR_PROPERTY_SEED asks
// for others (so a test that passed passes again on the same code, and a
// failure names the seed that replays it), fewer under the race detector,
// spread over every CPU, and held to floors so that a decision which holds
// back what it should send cannot pass by doing nothing. The packages the
// decision is split into share it, so each property test counts, seeds and
// judges its cases alike wherever its code lives.
package propertytest

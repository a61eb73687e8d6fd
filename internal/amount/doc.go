// Package amount answers one question for every package that computes with
// resources: what number a quantity of cpu or memory is. Requests, limits,
// bounds and allocatable all become cores or bytes the same way, rounded
// the same way, so a figure the learner compares, the dashboard draws and the
// report prices is the figure the decision sized.
//
// Usage read from a metrics source is not a quantity tailor sizes with, and
// keeps the precision its source gives it (nanocores, for one).
package amount

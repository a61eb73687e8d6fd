// Package render writes a replay's report as people and tools read it:
// aligned tables, JSON and SVG charts. It sits above package replay so the
// accounting never depends on how its figures are shown, and so that the
// CLI (`tailor replay`) and the benchmark module draw the same pictures.
package render

// Package lowering is what the gates on a policy's lowerings share: the
// Gate a sync passes its input through before fleet.DecidePolicy and
// settles after it, and the helpers each gate tells a lowering apart by
// (Changes) and holds one with (Without).
//
// The gates are apart from the fleet's order because they hold back only
// lowerings, for reasons of their own that outlive a sync (a canary's
// window, a change window, a budget's hour); each is a package of its own
// under this one (canary, limits), and neither imports the other, so a
// third is added without touching them. internal/autoscale composes them.
package lowering

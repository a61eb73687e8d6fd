// Package room decides how room is made in place on a full node: when a
// raise does not fit, which pods beside it give room (Decide), and how much
// each could give (OfferOf), before the raise is deferred or its pod
// recreated elsewhere.
//
// Room is only taken from pods tailor manages, of strictly lower priority,
// whose policy may lower them, and only what their own decision would lower
// once their scale-down stabilization window ended: equal priority never
// gives room, so two pods alike cannot take it back and forth. It builds on
// internal/autoscale/fleet (a pod's wish) and is composed into a sync by
// internal/autoscale.
package room

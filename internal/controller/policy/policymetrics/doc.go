// Package policymetrics holds the Prometheus series the TailorPolicy
// controller exports. They are their own package because every step of a
// sync (gather, the controller's memory, act, status) adds to them, and a
// deleted policy's series must all go at once (Forget): kept in any one
// step's package, the others would import it for its series alone.
package policymetrics

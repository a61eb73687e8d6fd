// Package nsrules knows what a namespace's LimitRanges and ResourceQuotas
// allow a pod's cpu and memory, as the apiserver's LimitRanger and
// ResourceQuota admission plugins apply them: the defaults a new pod gets,
// what would be refused on create or on a pods/resize update, the bounds a
// container's values must keep and the room a raise has left.
//
// Pure: the controller gathers the objects (as its cache holds them) and
// passes them in; nothing here reads a client or the clock.
package nsrules

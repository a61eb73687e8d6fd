// Package status is `tailor status`: each container's desired, allocated
// and actual resources and its pod's resize state, the three numbers an
// in-place resize moves through, which kubectl shows in three places.
package status

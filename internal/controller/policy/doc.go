// Package policy is the TailorPolicy controller: for each policy it gathers
// the selected pods, their usage and their node's headroom, lets the
// recommender and the resize planner decide, and asks the actuator to resize
// in place. It keeps no logic of its own beyond that plumbing: the rules live
// in internal/autoscale, internal/recommend and internal/resize.
package policy

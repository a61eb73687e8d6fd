// Package report is the pure core of `tailor report`: it groups running
// pods into workloads, finds the TailorPolicy that sizes each, and turns
// each container's current requests and either the policy's
// recommendation (in any mode, Off included) or what tailor's recommender
// makes of a usage history into one row with the projected savings and a
// one-line reason. Reading pods, policies and Prometheus is the CLI's.
package report

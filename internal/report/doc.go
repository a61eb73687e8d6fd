// Package report is the pure core of `tailor report`: it groups running
// pods into workloads, finds the TailorPolicy that sizes each, and turns
// each container's current requests and either the policy's
// recommendation (in any mode, Off included) or what tailor's recommender
// makes of a usage history into one row with the projected savings, what
// the requests cost a month now and at the recommendation (price.Book),
// and a one-line reason, with what a JVM's heap makes of its memory limit
// (jvm.JudgeFit). PlanTemplate turns a workload's rows into the values its
// pod template needs for the change taken through Git, a JVM's heap option
// sized for the limit it plans included.
// Reading pods, policies, templates and Prometheus is the CLI's.
package report

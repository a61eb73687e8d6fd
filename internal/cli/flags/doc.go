// Package flags holds the flags more than one verb takes: the prices that
// `tailor report` and the manager's dashboard put on requests, and how both
// reach a managed or secured Prometheus. Defined once, the two verbs spell,
// default and check them alike.
package flags

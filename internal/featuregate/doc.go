// Package featuregate tells which feature gates the cluster runs with, as
// far as a client can see them: the apiserver's kubernetes_feature_enabled
// metric. The CLI uses it to say what a resize will meet, and the manager
// to know whether the scheduler preempts for a deferred resize before it
// lets a policy count on it.
package featuregate

// Package vpa replays traces through the upstream Vertical Pod Autoscaler
// recommender's own code (its model and logic packages, default config), so
// tailor is compared with what VPA would really have recommended rather than
// with a re-implementation of it. It lives in the bench module so the main
// module never depends on VPA and its Kubernetes versions.
package vpa

// Package dashboard serves tailor's read-only web dashboard from the
// manager: an overview of every policy and namespace (requests before
// tailor and now, what they cost a month at the manager's prices, each pod
// at its node's, resizes, what is blocked), a page per workload charting
// each container's usage against its request, limit and target with every
// resize marked, and a cluster page of node allocatable against requests
// before and after.
//
// Its data is the manager's own: policies, pods and nodes from the
// manager's cache, and a bounded in-memory History the policy controller
// feeds (as an observation.Observer) each sync. It writes nothing to Kubernetes.
// The charts are uPlot, vendored from npm into static/vendor by `make ui`
// and embedded, so the pages need nothing from outside the manager.
package dashboard

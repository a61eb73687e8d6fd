// Package chaos breaks things under a running tailor manager on the local
// cluster (hack/cluster.sh) and checks the promises that must survive:
// leader failover with resizes in flight, an apiserver restart, each
// metrics source down, hung or answering garbage, and the objects tailor
// works on changing under it. The managers run as separate processes of the
// tailor binary, as in production, so they can be SIGKILLed; the cluster's
// own components are stopped and started with hack/cluster.sh. Tests build
// only with the e2e tag and run one at a time (make e2e), since each
// disturbs the whole cluster.
package chaos

// Package autoscaletest draws random inputs for the decision, the way
// net/http/httptest serves tests of net/http: pods of every shape a policy
// meets, a policy, what the recommender and metrics said, and the node's
// room for fleet.DecidePolicy (Case); the namespace's LimitRanges and
// quotas and a new pod's room for newpods.Admit and
// placement.DecideRecreate besides (Namespaced); and whole clusters of
// policies for autoscale.DecideSync (Sync). The invariant fuzz of
// internal/autoscale checks every decision on them offline; test/oracle
// sends the chosen resizes to a real apiserver. A seed replays the same
// case in either.
package autoscaletest

// Package autoscaletest draws random inputs for fleet.DecidePolicy, the
// way net/http/httptest serves tests of net/http: pods of every shape a
// policy meets, a policy, what the recommender and metrics said, and the
// node's room. The invariant fuzz of internal/autoscale checks every
// decision on them offline; test/oracle sends the chosen resizes to a real
// apiserver. A seed replays the same case in either.
package autoscaletest

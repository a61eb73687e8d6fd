// Package replay is `tailor replay`: recorded usage traces replayed through
// tailor's recommender beside other policies, offline. It lets a user judge
// the recommender on their own history before trusting it with a cluster.
package replay

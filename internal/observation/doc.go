// Package observation is what each sync of a policy saw and what tailor
// did, for the views of a policy over time: the policy controller hands
// them to an Observer, and the dashboard keeps and draws them. It stands
// between the two so that the dashboard reads figures, not the controller:
// it imports neither, and nothing that decides or acts.
package observation

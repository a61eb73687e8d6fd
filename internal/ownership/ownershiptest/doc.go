// Package ownershiptest draws namespaces of pods and overlapping policies
// for ClaimedBy's property tests, beside the ownership package it tests
// rather than in autoscaletest, so those tests need nothing of the
// decision above ownership.
package ownershiptest

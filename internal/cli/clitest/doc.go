// Package clitest serves what the verbs' tests need from a cluster without
// one: the root's tests run whole command lines, each verb's its own, and
// both talk to the same stand-in apiserver.
package clitest

// Package jvmtest starts real JVMs for tests: the packaged JDK's java and
// javac (hack/apps.sh installs them), running a small program that keeps a
// live set on its heap and allocates garbage at a steady rate, so that a
// collector has work and its counters move. Tests that need a JVM skip,
// saying so, only where java is not installed.
package jvmtest

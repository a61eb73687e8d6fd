// Command tailor is tailor's single binary: the autoscaling manager, the
// kubectl-style verbs (resize, status, replay) and the demo. Installed as
// kubectl-tailor it also works as a kubectl plugin.
package main

import (
	"os"
	// The manager reads change windows in the time zones policies name
	// (behavior.scaleDown.windows[].timeZone): built in, a zone resolves
	// the same whatever image or host the binary runs on.
	_ "time/tzdata"

	"github.com/tailorhq/tailor/internal/cli"
)

func main() {
	os.Exit(cli.Execute(os.Args[0], os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

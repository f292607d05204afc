// Command tenure-instance runs Tenure's reference lease manager, or its Redis leader election, as one
// instance under simrun's process protocol (docs/protocol.md). simrun starts it; see
// examples/reference/system.json.
package main

import (
	"os"

	"github.com/tenurelabs/tenure/systems/instance"
)

func main() {
	os.Exit(instance.Main(os.Args[1:], os.Getenv, os.Stdin, os.Stderr))
}

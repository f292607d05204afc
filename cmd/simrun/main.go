// Command simrun runs Tenure's lease and election scenarios against a real Redis through toxiproxy,
// checks the recorded history against Tenure's invariants and writes failover reports.
// See simcli for the flags and exit codes.
package main

import (
	"context"
	"os"

	"github.com/tenurelabs/tenure/simcli"
	// The baselines and peer libraries register themselves for comparison runs (simrun matrix, --system).
	_ "github.com/tenurelabs/tenure/systems/baselines"
	_ "github.com/tenurelabs/tenure/systems/peers"
)

func main() {
	os.Exit(simcli.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

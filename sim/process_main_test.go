package sim_test

import (
	"os"
	"testing"

	"github.com/tenurelabs/tenure/systems/instance"
)

// TestMain lets this test binary be a process instance too: started with RUN_AS_TENURE_INSTANCE=1 (by a
// system file of the tests), it runs the reference under the process protocol, as cmd/tenure-instance
// does, so the process tests need no build of their own.
func TestMain(m *testing.M) {
	if os.Getenv("RUN_AS_TENURE_INSTANCE") == "1" {
		os.Exit(instance.Main(os.Args[1:], os.Getenv, os.Stdin, os.Stderr))
	}
	os.Exit(m.Run())
}

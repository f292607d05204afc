// Package redistest gives tests a private real redis-server.
//
// When no redis-server binary is installed, tests that need one are skipped, unless the environment sets
// TENURE_REQUIRE_REDIS=1 (as CI does), in which case they fail: a CI run must never pass by skipping the
// real-Redis suite.
package redistest

import (
	"errors"
	"os"
	"testing"

	"github.com/tenurelabs/tenure/internal/redisserver"
)

// Required reports whether real-Redis tests must fail rather than skip when Redis is missing.
func Required() bool { return os.Getenv("TENURE_REQUIRE_REDIS") == "1" }

// Start starts a private redis-server for the test and stops it when the test ends.
func Start(t testing.TB) *redisserver.Server {
	t.Helper()
	s, err := redisserver.Start(redisserver.Options{})
	if err != nil {
		if errors.Is(err, redisserver.ErrNoBinary) && !Required() {
			t.Skipf("real-Redis test skipped: %v (set TENURE_REQUIRE_REDIS=1 to make this a failure)", err)
		}
		t.Fatalf("start private redis-server: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("stop redis-server: %v", err)
		}
	})
	return s
}

// Package pgtest gives tests the PostgreSQL server they share: its URL, a connection, and unique names
// for the objects a test creates.
//
// The server is TENURE_PG_URL, by default postgres://postgres@127.0.0.1:5432/test?sslmode=disable. When
// it cannot be reached, tests that need it are skipped, unless TENURE_REQUIRE_PG=1 (as in CI), in which
// case they fail: a CI run must never pass by skipping the PostgreSQL suite.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultURL is used when TENURE_PG_URL is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// URL returns the server's connection string.
func URL() string {
	if u := os.Getenv("TENURE_PG_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// Required reports whether PostgreSQL tests must fail rather than skip when the server is missing.
func Required() bool { return os.Getenv("TENURE_REQUIRE_PG") == "1" }

// Connect opens a connection for the test (closed when it ends), skipping or failing the test when the
// server cannot be reached.
func Connect(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, URL())
	if err == nil {
		err = conn.Ping(ctx)
	}
	if err != nil {
		if !Required() {
			t.Skipf("PostgreSQL test skipped: %s unreachable: %v (set TENURE_REQUIRE_PG=1 to make this a failure)", URL(), err)
		}
		t.Fatalf("PostgreSQL at %s unreachable: %v", URL(), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = conn.Close(ctx)
	})
	return conn
}

// Name returns prefix followed by 12 random hex digits: a lower-case identifier no other test uses.
func Name(t testing.TB, prefix string) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("random name: %v", err)
	}
	return strings.ToLower(prefix) + hex.EncodeToString(b[:])
}

// Drop runs each statement (e.g. "DROP TABLE IF EXISTS x") on conn when the test ends, in order.
func Drop(t testing.TB, conn *pgx.Conn, statements ...string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, s := range statements {
			if _, err := conn.Exec(ctx, s); err != nil {
				t.Errorf("pgtest cleanup %q: %v", s, err)
			}
		}
	})
}

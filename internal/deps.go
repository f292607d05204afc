//go:build tenuredeps

// This file pins the module's dependencies while packages are being written; it is not compiled.
package internal

import (
	_ "github.com/Shopify/toxiproxy/v2"
	_ "github.com/alicebob/miniredis/v2"
	_ "github.com/anishathalye/porcupine"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/redis/go-redis/v9"
	_ "github.com/stretchr/testify/require"
	_ "github.com/testcontainers/testcontainers-go"
	_ "golang.org/x/sys/unix"
)

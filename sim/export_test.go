package sim

import (
	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/history"
)

// NewRecordingHook returns the in-process recording hook an instance's client gets, for the tests
// that hold the wire recorder to it.
func NewRecordingHook(instance string, rec *history.Recorder, c OpClassifier, keyPrefix string) redis.Hook {
	return &recordingHook{instance: instance, rec: rec, classifier: c, defaults: defaultClassifier{leasePrefix: keyPrefix + "lease:"}}
}

// Housekeeping reports whether a command (by lower-case name) only sets up its connection, so that
// neither recorder records it.
func Housekeeping(name string) bool { return housekeeping(name) }

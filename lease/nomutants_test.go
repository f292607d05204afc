package lease

import (
	"testing"

	"github.com/tenurelabs/tenure/internal/buildcheck"
)

// The library as users build it carries none of the checker-power mutants: its documentation names
// none, and it neither imports the mutation set nor builds or embeds a mutant's file.
func TestDefaultBuildHasNoMutants(t *testing.T) { buildcheck.NoMutants(t, ".") }

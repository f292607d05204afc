package sim

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

var (
	registryMu sync.Mutex
	registry   = map[string]func() System{}
	hidden     = map[string]bool{}
)

// Register makes a system available by name to Lookup (and so to simrun --system). It panics on a
// duplicate name, like database/sql.Register.
func Register(name string, factory func() System) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("sim: Register called twice for system " + name)
	}
	registry[name] = factory
}

// RegisterHidden is Register for systems that Systems does not list but Lookup finds: the module's
// own test-only systems (the reference's mutants), runnable by name.
func RegisterHidden(name string, factory func() System) {
	Register(name, factory)
	registryMu.Lock()
	hidden[name] = true
	registryMu.Unlock()
}

// Lookup returns the system registered under name, or, for exec:PATH, the process system its system
// file describes (LoadSystemFile).
func Lookup(name string) (System, error) {
	if path, ok := strings.CutPrefix(name, ExecPrefix); ok {
		return LoadSystemFile(path)
	}
	registryMu.Lock()
	f, ok := registry[name]
	registryMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("sim: unknown system %q (known: %s)", name, strings.Join(Systems(), ", "))
	}
	return f(), nil
}

// Systems lists the registered names, sorted, leaving out hidden ones.
func Systems() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		if !hidden[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

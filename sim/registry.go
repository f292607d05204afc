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
	absent     = map[string]string{} // name prefix -> why Lookup finds none (RegisterAbsent)
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
// own special-purpose systems (reference-wait, and the reference's mutants in a simrun built for
// them), runnable by name.
func RegisterHidden(name string, factory func() System) {
	Register(name, factory)
	registryMu.Lock()
	hidden[name] = true
	registryMu.Unlock()
}

// RegisterAbsent makes Lookup of an unknown name that starts with prefix say why no such system is
// here, and how to get one: for systems that exist only in another build of simrun.
func RegisterAbsent(prefix, why string) {
	registryMu.Lock()
	defer registryMu.Unlock()
	absent[prefix] = why
}

// Absent reports why no system named name is registered, when RegisterAbsent said so for its prefix.
func Absent(name string) (why string, ok bool) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, registered := registry[name]; registered {
		return "", false
	}
	for prefix, w := range absent {
		if strings.HasPrefix(name, prefix) {
			return w, true
		}
	}
	return "", false
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
	if ok {
		return f(), nil
	}
	if why, ok := Absent(name); ok {
		return nil, fmt.Errorf("sim: unknown system %q: %s", name, why)
	}
	return nil, fmt.Errorf("sim: unknown system %q (known: %s)", name, strings.Join(Systems(), ", "))
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

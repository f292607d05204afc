package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// ProcessSystem is a system under test whose instances are OS processes speaking the process protocol
// (docs/protocol.md): any program, in any language. It is described by a system file (LoadSystemFile)
// or by a command line alone (NewExecSystem), and takes part wherever a registered system does; Run
// starts one process per instance, records its Redis traffic at the wire and serves its polls over
// HTTP.
type ProcessSystem struct {
	name, description, kind string
	command                 []string
	dir                     string   // the working directory, absolute
	env                     []string // KEY=VALUE added to every instance's environment, sorted
	readyTimeout            time.Duration
	topology                string
	caps                    Capabilities
	promises                Promises
	keys                    KeyLayout
	catalogue               *ScriptCatalogue
	ref                     string // how a command line names the system
}

// KeyLayout is how a process system's library names its keys (the system file's "keys"), where it
// departs from the names it is given.
type KeyLayout struct {
	// Prefix is put by the library before every name it is given (redis-semaphore's "mutex:"): given
	// <TENURE_KEY_PREFIX>lease:<endpoint>, it writes Prefix + that.
	Prefix string `json:"prefix,omitempty"`
}

// Capabilities are what a process system declares about itself (the system file's "capabilities").
type Capabilities struct {
	// Beliefs: its instances report what they believe they hold (POST /belief).
	Beliefs bool `json:"beliefs"`
	// Fencing: its instances pass the fencing token of their holding with each poll.
	Fencing bool `json:"fencing"`
	// Faketime: its runtime reads the clock through the C library, so that libfaketime can change the
	// clock's rate. Unset means true: clock scenarios run, after the start-up self-test.
	Faketime *bool `json:"faketime,omitempty"`
}

// honoursFaketime reports whether the system lets libfaketime be tried.
func (c Capabilities) honoursFaketime() bool { return c.Faketime == nil || *c.Faketime }

// DefaultReadyTimeout is how long an instance has to call POST /ready unless its system says otherwise.
const DefaultReadyTimeout = 10 * time.Second

var (
	_ System            = (*ProcessSystem)(nil)
	_ KindReporter      = (*ProcessSystem)(nil)
	_ Describer         = (*ProcessSystem)(nil)
	_ OpClassifier      = (*ProcessSystem)(nil)
	_ BookkeepingReader = (*ProcessSystem)(nil)
	_ TopologyUser      = (*ProcessSystem)(nil)
)

// Name implements System.
func (p *ProcessSystem) Name() string { return p.name }

// Kind implements KindReporter.
func (p *ProcessSystem) Kind() string { return p.kind }

// Description implements Describer.
func (p *ProcessSystem) Description() string {
	if p.description != "" {
		return p.description
	}
	return "a process system: " + strings.Join(p.command, " ")
}

// Topology implements TopologyUser: TopologySingle or TopologyIndependent.
func (p *ProcessSystem) Topology() string { return p.topology }

// Promises implements Promiser: what the system file's "promises" says.
func (p *ProcessSystem) Promises() Promises { return p.promises }

// Classify implements OpClassifier through the system's script catalogue: the built-in entries (the
// reference's scripts and the lock libraries') and the system file's own.
func (p *ProcessSystem) Classify(args []any, reply any, err error) (history.Op, bool) {
	return p.catalogue.Classify(args, reply, err)
}

// BookkeepingRead implements BookkeepingReader.
func (p *ProcessSystem) BookkeepingRead(args []any) bool { return p.catalogue.BookkeepingRead(args) }

// LearnScript passes a script body seen on the wire to the catalogue (see WireConfig.Classifier).
func (p *ProcessSystem) LearnScript(body string) { p.catalogue.LearnScript(body) }

// NewInstance implements System. A process system's instances are processes that Run starts itself; it
// has no in-process instance to give.
func (p *ProcessSystem) NewInstance(InstanceConfig) (Instance, error) {
	return nil, fmt.Errorf("sim: %s is a process system: its instances are started by sim.Run, not built in process", p.name)
}

// Ref is how a command line names the system: exec:PATH for a system file, or --exec 'CMD' for a
// command alone.
func (p *ProcessSystem) Ref() string { return p.ref }

// Command is the argv each instance runs.
func (p *ProcessSystem) Command() []string { return append([]string(nil), p.command...) }

// Capabilities returns what the system declares.
func (p *ProcessSystem) Capabilities() Capabilities { return p.caps }

// declaration says, for the history, what the system runs and what it declares of itself.
func (p *ProcessSystem) declaration() string {
	var caps []string
	if p.caps.Beliefs {
		caps = append(caps, "reports beliefs")
	}
	if p.caps.Fencing {
		caps = append(caps, "passes fencing tokens")
	}
	if !p.caps.honoursFaketime() {
		caps = append(caps, "reads a clock libfaketime cannot change")
	}
	said := "declares nothing of itself"
	if len(caps) > 0 {
		said = "declares that it " + strings.Join(caps, ", ")
	}
	return fmt.Sprintf("process system %s (%s): runs %q; %s", p.name, p.ref, strings.Join(p.command, " "), said)
}

// SystemFileName is the file a directory named by exec:DIR holds.
const SystemFileName = "system.json"

// ExecPrefix starts a system name that is a system file: exec:PATH.
const ExecPrefix = "exec:"

// systemFile is the JSON form of a system file. Scripts and capabilities are decoded on their own, so
// that an unknown field in one of them is named with its place.
type systemFile struct {
	Name           string            `json:"name"`
	Description    string            `json:"description"`
	Kind           string            `json:"kind"`
	Command        []string          `json:"command"`
	Dir            string            `json:"dir"`
	Env            map[string]string `json:"env"`
	ReadyTimeoutMS *int64            `json:"ready_timeout_ms"`
	Topology       string            `json:"topology"`
	Capabilities   json.RawMessage   `json:"capabilities"`
	Promises       json.RawMessage   `json:"promises"`
	Keys           json.RawMessage   `json:"keys"`
	Scripts        []json.RawMessage `json:"scripts"`
}

var systemNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// LoadSystemFile reads a system file (docs/protocol.md, "The system file"): path is the file, or a
// directory holding system.json. Every error names the file, and the field when one is at fault.
func LoadSystemFile(path string) (*ProcessSystem, error) {
	if path == "" {
		return nil, errors.New("sim: exec: needs a path: exec:DIR (a directory with system.json) or exec:FILE")
	}
	file := path
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		file = filepath.Join(path, SystemFileName)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("sim: system file %s does not exist (exec:PATH names a system file, or a directory holding %s)", file, SystemFileName)
		}
		return nil, fmt.Errorf("sim: system file %s: %w", file, err)
	}
	var sf systemFile
	if err := strictJSON(b, &sf); err != nil {
		return nil, fmt.Errorf("sim: system file %s: %s", file, jsonProblem(err, ""))
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, fmt.Errorf("sim: system file %s: %w", file, err)
	}
	p, err := buildProcessSystem(sf, filepath.Dir(abs))
	if err != nil {
		return nil, fmt.Errorf("sim: system file %s: %w", file, err)
	}
	p.ref = ExecPrefix + path
	return p, nil
}

// NewExecSystem is a process system given by its command line alone (simrun --exec): argv is split as
// a shell would split it (SplitCommand), without running a shell; kind is "lease" or "election". It
// runs in the current directory and declares no capabilities.
func NewExecSystem(command, kind string) (*ProcessSystem, error) {
	argv, err := SplitCommand(command)
	if err != nil {
		return nil, fmt.Errorf("sim: --exec: %w", err)
	}
	if kind == "" {
		kind = "lease"
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("sim: --exec: %w", err)
	}
	p, err := buildProcessSystem(systemFile{Name: "exec", Kind: kind, Command: argv}, wd)
	if err != nil {
		return nil, fmt.Errorf("sim: --exec: %s", strings.TrimPrefix(err.Error(), `field "command": `))
	}
	p.ref = "--exec " + shellQuote(command)
	if kind != "lease" {
		p.ref += " --kind " + kind
	}
	return p, nil
}

// buildProcessSystem checks a decoded system file; base is the directory relative paths start from.
func buildProcessSystem(sf systemFile, base string) (*ProcessSystem, error) {
	field := func(name, format string, args ...any) error {
		return fmt.Errorf("field %q: %s", name, fmt.Sprintf(format, args...))
	}
	p := &ProcessSystem{name: sf.Name, description: sf.Description, kind: sf.Kind, readyTimeout: DefaultReadyTimeout,
		topology: TopologySingle}
	switch {
	case sf.Name == "":
		return nil, field("name", "missing: name the system (letters, digits, '.', '_', '-')")
	case !systemNameRE.MatchString(sf.Name):
		return nil, field("name", "%q: use letters, digits, '.', '_' and '-', starting with a letter or digit", sf.Name)
	case sf.Kind == "":
		return nil, field("kind", `missing: "lease" or "election"`)
	case sf.Kind != "lease" && sf.Kind != "election":
		return nil, field("kind", `%q: want "lease" or "election"`, sf.Kind)
	case len(sf.Command) == 0 || sf.Command[0] == "":
		return nil, field("command", `missing: the argv each instance runs, e.g. ["python3", "instance.py"]`)
	case strings.ContainsAny(sf.Description, "\n\r"):
		return nil, field("description", "one line, please")
	}
	p.dir = base
	if sf.Dir != "" {
		p.dir = filepath.Join(base, sf.Dir)
		if filepath.IsAbs(sf.Dir) {
			p.dir = sf.Dir
		}
	}
	if st, err := os.Stat(p.dir); err != nil || !st.IsDir() {
		return nil, field("dir", "%s is not a directory", p.dir)
	}
	p.command = append([]string(nil), sf.Command...)
	if strings.Contains(p.command[0], "/") && !filepath.IsAbs(p.command[0]) {
		p.command[0] = filepath.Join(p.dir, p.command[0])
	}
	if _, err := exec.LookPath(p.command[0]); err != nil {
		return nil, field("command", "cannot run %q: %v", sf.Command[0], errors.Unwrap(err))
	}
	if err := nodeModulesInstalled(p.dir, p.command[0]); err != nil {
		return nil, err
	}
	for k, v := range sf.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, field("env", "%q is not a variable name", k)
		}
		if strings.HasPrefix(k, "TENURE_") {
			return nil, field("env", "%s: TENURE_* variables are the protocol's, set by the harness", k)
		}
		p.env = append(p.env, k+"="+v)
	}
	sort.Strings(p.env)
	if sf.ReadyTimeoutMS != nil {
		ms := *sf.ReadyTimeoutMS
		if ms < 1 || ms > 600_000 {
			return nil, field("ready_timeout_ms", "%d: want 1 to 600000 (milliseconds)", ms)
		}
		p.readyTimeout = time.Duration(ms) * time.Millisecond
	}
	switch sf.Topology {
	case "", "single":
	case TopologyIndependent:
		p.topology = TopologyIndependent
	default:
		return nil, field("topology", `%q: want "single" or "independent" (Sentinel and Cluster are not offered to process systems)`, sf.Topology)
	}
	if len(sf.Keys) > 0 {
		if err := strictJSON(sf.Keys, &p.keys); err != nil {
			return nil, errors.New(jsonProblem(err, "keys"))
		}
		if strings.ContainsAny(p.keys.Prefix, " \t\r\n") {
			return nil, field("keys", "prefix %q: a key prefix has no white space", p.keys.Prefix)
		}
	}
	if len(sf.Promises) > 0 {
		if err := strictJSON(sf.Promises, &p.promises); err != nil {
			return nil, errors.New(jsonProblem(err, "promises"))
		}
		if p.promises.Tick != "" && !slices.Contains(Ticks, p.promises.Tick) {
			return nil, field("promises", "tick %q: want %s (the harness interval at which the system looks for free endpoints)", p.promises.Tick, strings.Join(Ticks, " or "))
		}
	}
	if len(sf.Capabilities) > 0 {
		if err := strictJSON(sf.Capabilities, &p.caps); err != nil {
			return nil, errors.New(jsonProblem(err, "capabilities"))
		}
	}
	builtin := append(append(ReferenceLeaseScripts(), ReferenceElectionScripts()...), LibraryScripts()...)
	cat, err := NewScriptCatalogue(builtin...)
	if err != nil {
		return nil, err
	}
	for i, raw := range sf.Scripts {
		place := fmt.Sprintf("scripts[%d]", i)
		var s Script
		if err := strictJSON(raw, &s); err != nil {
			return nil, errors.New(jsonProblem(err, place))
		}
		if err := cat.Add(s); err != nil {
			return nil, field(place, "%s", strings.TrimPrefix(err.Error(), "sim: "))
		}
	}
	p.catalogue = cat
	return p, nil
}

// strictJSON decodes one JSON value into v, refusing unknown fields and trailing data.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more than one JSON value")
	}
	return nil
}

// jsonProblem says what a decoding error means for the reader, naming the field (under place, when
// the value decoded was part of a larger one).
func jsonProblem(err error, place string) string {
	in := func(name string) string {
		if place == "" {
			return name
		}
		return place + "." + name
	}
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	msg := err.Error()
	switch {
	case errors.As(err, &te) && te.Field != "":
		return fmt.Sprintf("field %q: want %s, got a JSON %s", in(te.Field), te.Type.String(), te.Value)
	case errors.As(err, &se):
		return fmt.Sprintf("not valid JSON (at byte %d): %v", se.Offset, se)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "not valid JSON: it ends before its value does"
	case strings.HasPrefix(msg, "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(msg, "json: unknown field "), `"`)
		return fmt.Sprintf("unknown field %q (docs/protocol.md lists the fields of a system file)", in(name))
	case place != "":
		return fmt.Sprintf("field %q: %v", place, err)
	}
	return msg
}

// nodeModulesInstalled refuses a Node program whose packages are not installed: its directory has a
// package.json with dependencies and no node_modules. Without the check each instance dies on its first
// require with a stack trace cut short in the instance's log, and the run reports only that the
// instances exited.
func nodeModulesInstalled(dir, command string) error {
	if filepath.Base(command) != "node" && filepath.Base(command) != "nodejs" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return nil // no package.json: nothing to install
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if json.Unmarshal(b, &pkg) != nil || len(pkg.Dependencies) == 0 {
		return nil
	}
	if st, err := os.Stat(filepath.Join(dir, "node_modules")); err == nil && st.IsDir() {
		return nil
	}
	how := "npm install"
	if _, err := os.Stat(filepath.Join(dir, "package-lock.json")); err == nil {
		how = "npm ci"
	}
	return fmt.Errorf("%s needs its Node packages (%s), which are not installed (no node_modules): run %q in %s (make setup does it for the examples)",
		dir, strings.Join(slices.Sorted(maps.Keys(pkg.Dependencies)), ", "), how, dir)
}

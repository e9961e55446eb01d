package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/internal/retention"
	"github.com/fusebox-hq/fusebox/notify"
)

// Config is a loaded config file. It is not modified after Parse returns, so
// it is safe for concurrent reads.
type Config struct {
	Path     string
	State    string        // the state directory (a relative state: taken from the config file's directory) or a redis:// URL; "" when not set
	Fsync    bool          // default true
	GCAfter  time.Duration // default 7 days (internal/retention)
	Defaults fusebox.Policy
	// DefaultNotify is defaults: notify:, the rules of circuits that set
	// none of their own (Notify).
	DefaultNotify notify.Rules
	// HistoryKeep is how long events are kept (history: keep:, default
	// 30 days, internal/retention).
	HistoryKeep time.Duration
	Circuits    map[string]*Circuit
	Chains      map[string]*httpcall.Chain // Endpoints name circuits only: nested chains are inlined
	// MQTT is the top-level mqtt: block: the broker notify: mqtt: and
	// health: mqtt: use unless they name their own; nil when not set.
	MQTT    *notify.MQTT
	Secrets []string // every value that came from ${VAR}, ${file:...} or !secret
	// defaultSources says where each policy key of defaults: was set.
	defaultSources map[string]Source
	// chainSources says where each chain's own keys were set.
	chainSources map[string]map[string]Source
	// Partial says the Config holds only what fusebox run of one circuit
	// reads (LoadForRun decoded no other): Circuits that circuit at most,
	// no Chains, and Secrets only theirs (Secrets(Path) has them all).
	Partial bool
}

// Circuit is one entry of circuits:.
type Circuit struct {
	Name string
	// Policy is defaults: merged with the circuit's own keys, field by field
	// (failure_rate as a whole). Zero fields still mean the built-in
	// defaults: call WithDefaults to fill them.
	Policy   fusebox.Policy
	Endpoint *httpcall.Endpoint // nil without an http: block
	// Notify is defaults: notify: with the circuit's own notify: keys
	// over it.
	Notify notify.Rules
	// SkipExit is the exit status of a run skipped because the circuit is
	// open (skip_exit:), for a command whose own 75 means something; nil:
	// 75.
	SkipExit *int
	// Watch is the circuit's health: mqtt: block; nil without one.
	Watch *notify.Watch
	// sources says where each of the circuit's own policy keys (and
	// skip_exit and health.mqtt.up) was set.
	sources map[string]Source
}

// Source is where the config set a value.
type Source struct {
	File string
	Line int
	Key  string // its dotted path: "circuits.zigbee2mqtt.attempts"
}

func (s Source) String() string { return fmt.Sprintf("%s:%d (%s)", s.File, s.Line, s.Key) }

// PolicySource returns where the config sets policy key (a key of defaults:
// such as "attempts" or "failure_rate.window", or "skip_exit", or
// "health.mqtt.up" for a watch's condition) for the named
// circuit: in the circuit's own entry, else in defaults:. It reports false
// when neither sets it.
func (c *Config) PolicySource(name, key string) (Source, bool) {
	if c == nil {
		return Source{}, false
	}
	if circ, ok := c.Circuits[name]; ok {
		if s, ok := circ.sources[key]; ok {
			return s, true
		}
	}
	s, ok := c.defaultSources[key]
	return s, ok
}

// PolicyKeys returns the policy keys of defaults: and of a circuit in the
// order the config's key table has them, those of retry_budget: and
// failure_rate: by their dotted paths (retry_budget.percent): the values of
// a policy PolicySource says the place of.
func PolicyKeys() []string {
	var out []string
	for _, k := range table().policy.keys {
		if k.block == nil {
			out = append(out, k.name)
			continue
		}
		for _, sub := range k.block.keys {
			out = append(out, k.name+"."+sub.name)
		}
	}
	return out
}

// ChainSource returns where the config sets a chain's own key (fresh,
// stale, deadline or hedge); false when the chain leaves it out.
func (c *Config) ChainSource(chain, key string) (Source, bool) {
	if c == nil {
		return Source{}, false
	}
	s, ok := c.chainSources[chain][key]
	return s, ok
}

// Env is what Parse may read besides the config text: environment variables
// for ${VAR}, and files for ${file:...} and secrets.yaml. A nil Lookup sets
// no variables; a nil ReadFile reads no files.
type Env struct {
	Lookup   func(string) (string, bool)
	ReadFile func(string) ([]byte, error)
	// UncheckedJQ keeps jq expressions (extract:, expect: jq:, up:) as text
	// (httpcall.JQSource) without compiling them, for a caller that never
	// evaluates one: fusebox run, where compiling every endpoint's
	// expressions was a fifth of reading a household's config. A broken
	// expression is then reported by validate, call and serve, which load
	// with it false and hand httpcall the programs compiled.
	UncheckedJQ bool
}

// Load reads the config file at path and, only when a !secret is used,
// secrets.yaml beside it; ${VAR} comes from the process environment. A file
// that cannot be read is a plain error wrapping the fs error; problems in its
// content are *Error, joined. Only regular files are read, never a FIFO or a
// device, and none longer than MaxConfigSize (the config) or MaxFileValue
// (secrets.yaml, ${file:}).
func Load(path string) (*Config, error) {
	data, err := ReadRegularFile(path, MaxConfigSize)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data, fileEnv(false))
}

// LoadForRun is Load for fusebox run of the circuit name, which evaluates
// no jq expression (Env.UncheckedJQ) and needs nothing of the other
// circuits or of chains: the file is parsed whole, once, and of its
// circuits only name's entry is decoded, its keys checked as strictly as
// Load checks them; the other circuits' entries and chains: are neither
// decoded nor checked. The Config holds the top-level keys, defaults: and
// that circuit only (Partial). A problem in what is read is reported as
// Load would report it, with the whole file's other problems; a problem
// elsewhere costs the run nothing (validate, call and serve report it).
func LoadForRun(path, name string) (*Config, error) {
	data, err := ReadRegularFile(path, MaxConfigSize)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return loadForRun(path, data, name, fileEnv(true))
}

func loadForRun(path string, data []byte, name string, env Env) (*Config, error) {
	c, _, err := parse(path, data, env, scope{only: name})
	if err == nil {
		return c, nil
	}
	// What is wrong, and where, is the whole file's to say: the circuit's
	// problems are among them.
	if _, _, whole := parse(path, data, env, scope{}); whole != nil {
		return nil, whole
	}
	return nil, err
}

// LoadUsing is Load for a command that uses the values of the circuits
// named, and of no other: it reads every circuit's name and policy (status,
// history, trip, reset, gc). A ${VAR} or ${file:...} in another circuit's
// entry that this process cannot expand (a variable the daemon's unit sets
// and a shell does not) costs it nothing: the values it would fill stay
// empty. Any other problem, and one in a named circuit or outside
// circuits:, is reported as Load reports it; validate, run and call of the
// circuit still report it.
func LoadUsing(path string, names []string) (*Config, error) {
	data, err := ReadRegularFile(path, MaxConfigSize)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	c, _, err := parse(path, data, fileEnv(false), scope{uses: append([]string{}, names...)})
	return c, err
}

// fileEnv is the Env of a config read from a file: the process environment
// and regular files.
func fileEnv(uncheckedJQ bool) Env {
	return Env{
		Lookup:      os.LookupEnv,
		ReadFile:    func(p string) ([]byte, error) { return ReadRegularFile(p, MaxFileValue) },
		UncheckedJQ: uncheckedJQ,
	}
}

// Secrets returns the secrets of the whole config file at path, every value
// that came from ${VAR}, ${file:...} or !secret, as far as they can be read:
// a problem elsewhere in the file does not stop it, and jq is not checked.
// It is for hiding them from what a user of a Partial config prints.
func Secrets(path string) []string {
	data, err := ReadRegularFile(path, MaxConfigSize)
	if err != nil {
		return nil
	}
	_, secrets, _ := parse(path, data, fileEnv(true), scope{})
	return secrets
}

// Parse parses the config text data, read from path (used in errors and to
// find secrets.yaml and relative paths). It reads nothing but through env.
// Every problem found is an *Error, and all of them are returned joined.
func Parse(path string, data []byte, env Env) (*Config, error) {
	c, _, err := parse(path, data, env, scope{})
	return c, err
}

// scope says what of a config a command reads: the zero scope, all of it.
type scope struct {
	// only, when not "", is the one circuit decoded (fusebox run's): the
	// other circuits and chains: are not (Config.Partial).
	only string
	// uses, when not nil, are the only circuits whose values the command
	// uses (it reads the others' names and policies): a reference another
	// circuit makes that this process cannot expand is no problem of its.
	uses []string
}

// spares says whether a reference in the entry of circuit (a name, or ""
// outside circuits:) that cannot be expanded is left unreported.
func (s scope) spares(circuit string) bool {
	return s.uses != nil && circuit != "" && !slices.Contains(s.uses, circuit)
}

// parse is Parse of what s says that also returns the secrets it found, a
// problem or not.
func parse(path string, data []byte, env Env, s scope) (*Config, []string, error) {
	if env.Lookup == nil {
		env.Lookup = func(string) (string, bool) { return "", false }
	}
	if env.ReadFile == nil {
		env.ReadFile = func(string) ([]byte, error) { return nil, errors.New("reading files is not allowed") }
	}
	probs := &problems{}
	doc := parseYAML(path, data, probs)
	if doc == nil {
		return nil, nil, probs.err()
	}
	l := &loader{yamlDoc: doc, env: env, scope: s, dir: filepath.Dir(path), isSecret: map[string]bool{}}
	c := l.config(path)
	if err := probs.err(); err != nil {
		return nil, l.secrets, err
	}
	return c, c.Secrets, nil
}

// Policy returns the merged policy of the named circuit, or the defaults for
// a circuit the config does not name. Zero fields mean the built-in defaults.
func (c *Config) Policy(name string) fusebox.Policy {
	if c == nil {
		return fusebox.Policy{}
	}
	if circ, ok := c.Circuits[name]; ok {
		return circ.Policy
	}
	return c.Defaults
}

// Notify returns the notification rules of the named circuit: its own, or
// the defaults' for a circuit the config does not name.
func (c *Config) Notify(name string) notify.Rules {
	if c == nil {
		return notify.Rules{}
	}
	if circ, ok := c.Circuits[name]; ok {
		return circ.Notify
	}
	return c.DefaultNotify
}

// SkipExit returns the exit status of a skipped run of the named circuit,
// when its config sets one.
func (c *Config) SkipExit(name string) (int, bool) {
	if c == nil {
		return 0, false
	}
	if circ, ok := c.Circuits[name]; ok && circ.SkipExit != nil {
		return *circ.SkipExit, true
	}
	return 0, false
}

// loader holds the state of one Parse.
type loader struct {
	*yamlDoc
	env           Env
	scope         scope
	circuit       string // the circuit whose entry is being read, if any
	dir           string // the config file's directory, for relative paths
	secrets       []string
	isSecret      map[string]bool
	endpoint      *httpcall.Endpoint // the endpoint being read, if any: it keeps its own secrets
	secretValues  map[string]string  // secrets.yaml, once read
	secretsFailed bool               // secrets.yaml could not be read (reported once)
	mqttBase      *notify.MQTT       // the top-level mqtt: block, read before the rest
}

// topRead is what reading the top-level keys builds besides the Config.
type topRead struct {
	c *Config
	// reported are the problems of defaults:, not reported again for each
	// circuit that inherits them.
	reported map[fusebox.FieldError]bool
	circuits map[string]entry // where each circuit with a valid name was named
	chains   []*chainDef      // the chains with valid names, in the file's order
}

func (l *loader) config(path string) *Config {
	c := &Config{
		Path:        path,
		Fsync:       true,
		GCAfter:     retention.GCAfter,
		HistoryKeep: retention.Events,
		Circuits:    map[string]*Circuit{},
		Chains:      map[string]*httpcall.Chain{},

		chainSources: map[string]map[string]Source{},
	}
	t := &topRead{c: c, circuits: map[string]entry{}}
	l.read(entry{value: l.body}, table().top, t, nil, "")
	l.chains(t)                    // those read: none for fusebox run, whose scope skips them
	c.Partial = l.scope.only != "" // one circuit and no chains read
	watchBrokers(c)
	c.Secrets = l.secrets
	return c
}

// stateDir reads state:, a dir relative to the config file's directory or a
// redis:// (rediss://) URL, whose password joins the secrets to redact.
func (l *loader) stateDir(e entry) (string, bool) {
	s, ok := l.str(e.value, e.path)
	if ok && s == "" {
		l.errorAt(e, e.path, "must not be empty (leave it out for the default)")
		return "", false
	}
	if ok && (strings.HasPrefix(s, "redis://") || strings.HasPrefix(s, "rediss://")) {
		u, err := url.Parse(s)
		if err != nil {
			l.errorAt(e, e.path, "is not a valid redis URL (redis://[user:pass@]host:6379/0)")
			return "", false
		}
		if p, ok := u.User.Password(); ok && p != "" {
			l.secrets = append(l.secrets, p)
		}
		if u.Host == "" {
			l.errorAt(e, e.path, "a redis URL needs a host (redis://[user:pass@]host:6379/0)")
			return "", false
		}
		return s, true
	}
	if ok && !filepath.IsAbs(s) {
		s = filepath.Join(l.dir, s)
	}
	return s, ok
}

// positive reads a duration that must not be zero.
func (l *loader) positive(e entry) (time.Duration, bool) {
	d, ok := l.duration(e.value, e.path)
	if ok && d == 0 {
		l.errorf(e.value, e.path, "must be more than 0")
		return 0, false
	}
	return d, ok
}

// defaults reads the defaults: section over a zero Policy.
func (l *loader) defaults(e entry, b *block, t *topRead) {
	r := &circuitRead{refs: keyRefs{}}
	l.read(e, b, r, r.refs, "")
	t.c.Defaults, t.c.DefaultNotify = r.p, r.rules
	t.c.defaultSources = l.sources(r.refs)
	t.reported = l.validate(r.p, r.refs, nil, nil)
}

// sources says where each key of refs was set.
func (l *loader) sources(refs keyRefs) map[string]Source {
	out := make(map[string]Source, len(refs))
	for k, e := range refs {
		s := Source{File: l.file, Key: e.path}
		if e.key != nil && e.key.Position != nil {
			s.Line = e.key.Position.Line
		}
		out[k] = s
	}
	return out
}

// errorAt reports a problem at the key of e.
func (l *loader) errorAt(e entry, path, format string, args ...any) {
	l.probs.add(l.file, e.key, path, format, args...)
}

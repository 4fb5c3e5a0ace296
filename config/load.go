package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// EnvPrefix prefixes every environment variable relay reads.
const EnvPrefix = "RELAY"

// Setting describes one configuration key: its file key, environment
// variable, flag and default. Settings() lists them all; the configuration
// reference in the docs is checked against it.
type Setting struct {
	Key     string // config file key, e.g. database_url
	Env     string // environment variable, e.g. RELAY_DATABASE_URL
	Flag    string // command-line flag, e.g. --database-url
	Default string // the default, formatted
	Usage   string // one line of help
}

// usage is the help text for every key; a key missing here fails the
// package tests.
var usage = map[string]string{
	"database_url":                   "PostgreSQL connection URL (its password is never printed)",
	"database_direct_url":            "PostgreSQL itself, not a pooler, for commands that need a session: relay migrate, demo (empty: database_url)",
	"database_pooler":                "what database_url reaches: none (PostgreSQL) or transaction (a transaction pooler such as PgBouncer: no prepared statements, no LISTEN, session settings checked, not sent)",
	"database_schema":                "schema holding relay's and River's tables (empty: the server's search_path)",
	"statement_timeout":              "longest any single SQL statement may run",
	"idle_in_transaction_timeout":    "ends sessions idle inside a transaction for longer than this",
	"log_level":                      "log level: debug, info, warn or error",
	"log_format":                     "log format: text or json",
	"worker_concurrency":             "resolve_file batches worked at once by one worker process",
	"poi_timeout":                    "deadline for resolving one POI; past it the POI is dead-lettered as timeout",
	"job_timeout":                    "deadline for one resolve_file batch",
	"max_attempts":                   "attempts River makes at a failing batch before discarding it",
	"rescue_stuck_jobs_after":        "how long a job may stay running before River's rescuer retries it (a killed worker)",
	"discarded_job_retention":        "how long River keeps discarded jobs (relay captures them into dead_lettered_items first)",
	"sweep_interval":                 "how often a worker captures discarded batches into dead_lettered_items",
	"worker_heartbeat_interval":      "how often a worker renews its heartbeat and looks for workers that are gone",
	"worker_heartbeat_timeout":       "how old a heartbeat may be before other workers return that worker's running jobs to the queue",
	"shutdown_timeout":               "on SIGINT/SIGTERM, how long in-flight batches may finish before they are cancelled (and retried later)",
	"fetch_cooldown":                 "least time between two job fetches by one worker (River's default is 100ms)",
	"fetch_poll_interval":            "how often a worker fetches jobs at least; behind a transaction pooler (no LISTEN), how long a new job can wait (River's default is 1s)",
	"publish_queue_interval":         "how often an idle worker publishes analyses queued by the SQL publish API (relay_publish)",
	"link_delay":                     "how long after its publish a file's references are linked at the earliest, so that the files it calls, published just after it, are found at once (0: at once)",
	"gc_percent":                     "Go garbage collector target (GOGC) of processes that work batches; the GOGC environment variable wins; -1 is off",
	"river_synchronous_commit":       "synchronous_commit of the worker's connections for River's own statements (fetch, completer, maintenance); relay's writes use the server's",
	"max_job_bytes":                  "POI JSON bytes per resolve_file job; larger files are split across jobs",
	"max_poi_bytes":                  "largest single POI accepted at publish, in bytes",
	"reprocess_max_attempts":         "reprocess attempts per failed_pois row before it needs manual review",
	"mapreduce_max_retries":          "retries per MapReduce item; dead-lettered after this many + 1 failed attempts",
	"mapreduce_parallel":             "MapReduce agents run at once by one process",
	"mapreduce_timeout":              "deadline for one MapReduce agent run",
	"mapreduce_workdir":              "where MapReduce attempt directories and agent logs go (empty: relay/mapreduce in the user's cache directory, private; /var/cache/relay/mapreduce when agents run as agent_user)",
	"agent_env":                      "variables added to MapReduce agents' environment: NAME (its value in relay's environment) or NAME=VALUE; not RELAY_* or PG*; blank-separated in the environment variable, repeatable as a flag",
	"agent_user":                     "user MapReduce agents run as when relay runs as root (required then: relay runs no agent as root)",
	"dlq_max_items":                  "dead_lettered_items kept per MapReduce job; the oldest 10% are evicted when full",
	"http_addr":                      "worker's /healthz, /readyz and /metrics address, e.g. 127.0.0.1:9090 (empty: off)",
	"health_max_new_failed_pois":     "above this many new failed_pois rows /readyz reports degraded",
	"health_max_dead_lettered_items": "above this many dead-lettered items /readyz reports degraded",
	"metrics_refresh":                "how often database-derived gauges (dead-letter depth, queue depth) are re-read",
	"ui_addr":                        "where relay ui serves the web console; anything but loopback requires ui_password or ui_token",
	"ui_read_only":                   "web console without actions: none shown, every POST answered 403",
	"ui_user":                        "web console basic auth user (with ui_password)",
	"ui_password":                    "web console basic auth password (never printed)",
	"ui_token":                       "web console bearer token, Authorization: Bearer (never printed)",
	"worker_console":                 "mount the web console under /ui/ in the worker's HTTP server (needs http_addr)",
}

// Settings lists every configuration key in struct order.
func Settings() []Setting {
	def := reflect.ValueOf(Default()).Elem()
	t := def.Type()
	out := make([]Setting, 0, t.NumField())
	for i := range t.NumField() {
		key := t.Field(i).Tag.Get("mapstructure")
		out = append(out, Setting{
			Key:     key,
			Env:     EnvPrefix + "_" + strings.ToUpper(key),
			Flag:    "--" + strings.ReplaceAll(key, "_", "-"),
			Default: formatDefault(key, def.Field(i).Interface()),
			Usage:   usage[key],
		})
	}
	return out
}

func formatDefault(key string, v any) string {
	if isURLKey(key) {
		return Redact(v.(string))
	}
	switch v := v.(type) {
	case string:
		return v
	case []string:
		return strings.Join(v, " ")
	case time.Duration:
		return v.String()
	default:
		return fmt.Sprint(v)
	}
}

// RegisterFlags adds a flag for every setting to fs, plus --config.
// The flag defaults shown in --help are relay's defaults; flags only take
// precedence when they are set explicitly.
func RegisterFlags(fs *pflag.FlagSet) {
	fs.String("config", "", "path to a config file (YAML, TOML or JSON) holding any of the keys below")
	def := reflect.ValueOf(Default()).Elem()
	t := def.Type()
	for i := range t.NumField() {
		key := t.Field(i).Tag.Get("mapstructure")
		name := strings.ReplaceAll(key, "_", "-")
		help := fmt.Sprintf("%s (env %s_%s)", usage[key], EnvPrefix, strings.ToUpper(key))
		switch v := def.Field(i).Interface().(type) {
		case string:
			if isURLKey(key) {
				// Never show a password in --help, even one put into the
				// default by a future change.
				v = Redact(v)
			}
			fs.String(name, v, help)
		case int:
			fs.Int(name, v, help)
		case time.Duration:
			fs.Duration(name, v, help)
		case bool:
			fs.Bool(name, v, help)
		case []string:
			// Repeatable; a value may hold commas (NO_PROXY=a,b).
			fs.StringArray(name, v, help)
		default:
			panic(fmt.Sprintf("config: no flag type for %s (%T)", key, v))
		}
	}
}

// Load reads the configuration: explicitly set flags beat RELAY_* environment
// variables, which beat the config file (--config), which beats the defaults.
// lookupEnv is os.LookupEnv in production; tests pass their own.
//
// Its errors never show a password of any database_url it read (flag,
// environment, config file, or a misspelt key of the file), however a
// library quoted it.
func Load(fs *pflag.FlagSet, lookupEnv func(string) (string, bool)) (*Config, error) {
	red := NewRedactor()
	cfg, err := load(fs, lookupEnv, red)
	if err != nil {
		return nil, &redactedError{msg: red.Redact(err.Error()), err: err}
	}
	return cfg, nil
}

// redactedError is an error whose message has its passwords hidden; Unwrap
// keeps the original chain for errors.Is and errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func load(fs *pflag.FlagSet, lookupEnv func(string) (string, bool), red *Redactor) (*Config, error) {
	v := viper.New()
	def := reflect.ValueOf(Default()).Elem()
	t := def.Type()
	for i := range t.NumField() {
		key := t.Field(i).Tag.Get("mapstructure")
		v.SetDefault(key, def.Field(i).Interface())
	}
	if fs != nil {
		if path, _ := fs.GetString("config"); path != "" {
			v.SetConfigFile(path)
			if err := v.ReadInConfig(); err != nil {
				return nil, fmt.Errorf("error reading config file %q: %w", path, errors.New(Redact(err.Error())))
			}
			// Whatever happens next, errors must not show this password,
			// nor one under a misspelt key.
			for _, k := range v.AllKeys() {
				if isURLKey(k) || !slices.Contains(Keys(), k) {
					red.Add(v.GetString(k))
				}
			}
			// Only defaults and the file are loaded yet, so any key
			// beyond the defaults' is the file's own.
			if err := checkKeys(path, v.AllKeys()); err != nil {
				return nil, err
			}
		}
	}
	// Environment beats the file and flags beat the environment: viper's Set
	// is its highest layer, and a later Set wins.
	for i := range t.NumField() {
		key := t.Field(i).Tag.Get("mapstructure")
		if val, ok := lookupEnv(EnvPrefix + "_" + strings.ToUpper(key)); ok {
			if isURLKey(key) {
				red.Add(val)
			}
			if _, list := def.Field(i).Interface().([]string); list {
				v.Set(key, strings.Fields(val)) // entries separated by blanks
				continue
			}
			v.Set(key, val)
		}
	}
	if fs != nil {
		for i := range t.NumField() {
			key := t.Field(i).Tag.Get("mapstructure")
			if f := fs.Lookup(strings.ReplaceAll(key, "_", "-")); f != nil && f.Changed {
				if isURLKey(key) {
					red.Add(f.Value.String())
				}
				if sv, ok := f.Value.(pflag.SliceValue); ok {
					v.Set(key, sv.GetSlice()) // a repeated flag's values, as given
					continue
				}
				v.Set(key, f.Value.String())
			}
		}
	}
	cfg := &Config{}
	if err := v.Unmarshal(cfg); err != nil {
		return nil, fmt.Errorf("error decoding configuration: %w", errors.New(Redact(err.Error())))
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// isURLKey reports whether key holds a connection string, which may hold a
// password.
func isURLKey(key string) bool { return key == "database_url" || key == "database_direct_url" }

// Keys lists every configuration key (config file keys) in struct order.
func Keys() []string {
	t := reflect.TypeFor[Config]()
	out := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		out = append(out, t.Field(i).Tag.Get("mapstructure"))
	}
	return out
}

// checkKeys returns an error naming every key of the config file at path
// that relay does not know, with the closest known key: a typo such as
// databse_url would otherwise be ignored silently and the default used.
func checkKeys(path string, keys []string) error {
	known := Keys()
	var errs []error
	for _, k := range keys {
		if slices.Contains(known, k) {
			continue
		}
		msg := fmt.Sprintf("config file %q: unknown key %q", path, k)
		if s := closest(k, known); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		errs = append(errs, errors.New(msg))
	}
	return errors.Join(errs...)
}

// UnknownEnv returns a warning for every RELAY_* variable in environ (as
// os.Environ gives it) that is not a configuration key's nor one of
// alsoKnown (variables relay sets for others, such as a MapReduce agent's
// RELAY_JOB_ID). The environment is shared with other programs, so these
// are warnings, not errors.
func UnknownEnv(environ []string, alsoKnown ...string) []string {
	var envs []string
	for _, k := range Keys() {
		envs = append(envs, EnvPrefix+"_"+strings.ToUpper(k))
	}
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix+"_") || slices.Contains(envs, name) || slices.Contains(alsoKnown, name) {
			continue
		}
		msg := fmt.Sprintf("unknown environment variable %s is ignored", name)
		if s := closest(name, envs); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", s)
		}
		out = append(out, msg)
	}
	slices.Sort(out)
	return out
}

// closest returns the candidate nearest to s by edit distance, or "" when
// none is near enough to be a plausible typo.
func closest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		d := editDistance(strings.ToLower(strings.ReplaceAll(s, "-", "_")), strings.ToLower(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 || bestD > 3 || 3*bestD > len(best) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

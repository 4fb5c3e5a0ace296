package main

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/relay-dev/relay/config"
)

// takeEnv snapshots the environment for the configuration (cli.Env's
// LookupEnv reads the snapshot, and so do agent_env's NAME entries, which
// pass a variable as relay started with it) and removes relay's own RELAY_*
// variables, the database URL among them, from the process environment, so
// that no process relay starts inherits them by accident. (Agents get an
// allow-listed environment anyway, plus what agent_env adds, which is never
// RELAY_* or PG*; see internal/agent.AllowedEnv and ResolveEnv.)
//
// PG* variables (PGPASSWORD, PGPASSFILE, PGSERVICEFILE, PGSSLKEY, ...) stay:
// pgx reads them from the process environment when it opens the pool, so
// removing them would break connections configured that way. They never
// reach an agent, and no agent can read relay's /proc/<pid>/environ: an
// agent of relay's own user is stopped by non-dumpability (harden), and
// root, whom that does not stop, is never an agent's user (relay as root
// runs agents as agent_user; internal/agent.User). Note that unsetting a
// variable does not change /proc/<pid>/environ, which shows the environment
// relay started with.
func takeEnv() func(string) (string, bool) {
	snapshot := make(map[string]string)
	for _, kv := range os.Environ() {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		snapshot[k] = strings.Clone(v)
		if strings.HasPrefix(k, config.EnvPrefix+"_") {
			_ = os.Unsetenv(k)
		}
	}
	return func(k string) (string, bool) {
		v, ok := snapshot[k]
		return v, ok
	}
}

// warnDatabaseURLFlag warns, once per flag, when --database-url or
// --database-direct-url on the command line carries a password: every
// process on the host, agents included, can read a command line (ps,
// /proc/<pid>/cmdline).
func warnDatabaseURLFlag(w io.Writer, args []string) {
	for _, f := range []struct{ flag, env string }{
		{"--database-url", "RELAY_DATABASE_URL"},
		{"--database-direct-url", "RELAY_DATABASE_DIRECT_URL"},
	} {
		if v, ok := flagValue(args, f.flag); ok && hasPassword(v) {
			key := strings.ReplaceAll(strings.TrimPrefix(f.flag, "--"), "-", "_")
			fmt.Fprintf(w, "relay: warning: %s %s carries a password, which any process on this host "+
				"(MapReduce agents included) can read in relay's command line; set %s, or "+
				"%s in a --config file only relay's user can read, instead\n", f.flag, config.Redact(v), f.env, key)
		}
	}
}

// flagValue returns the value of the first occurrence of flag in args
// before "--", in either the "--flag value" or the "--flag=value" form.
func flagValue(args []string, flag string) (string, bool) {
	for i, arg := range args {
		switch {
		case arg == "--":
			return "", false
		case arg == flag && i+1 < len(args):
			return args[i+1], true
		case strings.HasPrefix(arg, flag+"="):
			return strings.TrimPrefix(arg, flag+"="), true
		}
	}
	return "", false
}

// hasPassword reports whether a database URL or keyword/value connection
// string holds a password.
func hasPassword(dsn string) bool {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		if _, ok := u.User.Password(); ok {
			return true
		}
		return u.Query().Has("password")
	}
	return config.Redact(dsn) != dsn // password=... pairs
}

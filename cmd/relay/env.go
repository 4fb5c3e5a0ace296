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
// LookupEnv reads the snapshot) and removes relay's own RELAY_* variables,
// the database URL among them, from the process environment, so that no
// process relay starts inherits them by accident. (Agents get an
// allow-listed environment anyway; see internal/agent.AllowedEnv.)
//
// PG* variables (PGPASSWORD, PGPASSFILE, PGSERVICEFILE, PGSSLKEY, ...) stay:
// pgx reads them from the process environment when it opens the pool, so
// removing them would break connections configured that way. They never
// reach an agent (the allow-list), and no agent can read relay's
// /proc/<pid>/environ (harden). Note that unsetting a variable does not
// change /proc/<pid>/environ, which shows the environment relay started
// with: only non-dumpability protects that.
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

// warnDatabaseURLFlag warns, once, when --database-url on the command line
// carries a password: every process on the host, agents included, can read
// a command line (ps, /proc/<pid>/cmdline).
func warnDatabaseURLFlag(w io.Writer, args []string) {
	const flag = "--database-url"
	for i, arg := range args {
		if arg == "--" {
			return
		}
		var v string
		switch {
		case arg == flag && i+1 < len(args):
			v = args[i+1]
		case strings.HasPrefix(arg, flag+"="):
			v = strings.TrimPrefix(arg, flag+"=")
		default:
			continue
		}
		if hasPassword(v) {
			fmt.Fprintf(w, "relay: warning: --database-url %s carries a password, which any process on this host "+
				"(MapReduce agents included) can read in relay's command line; set RELAY_DATABASE_URL, or "+
				"database_url in a --config file only relay's user can read, instead\n", config.Redact(v))
			return
		}
	}
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

package cli_test

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relay-dev/relay/internal/cli"
	"github.com/relay-dev/relay/internal/testdb"
)

// TestMain_PasswordsRedactedInEveryFailingCommand runs worker, publish and
// migrate against URLs holding a password, every way a URL can arrive
// (flag, environment, config file, keyword/value DSN), in text and JSON
// logs at debug level, failing in every way we can provoke: unreachable
// server, missing database on a real server, unparsable URL. The password
// must never appear in stdout or stderr.
func TestMain_PasswordsRedactedInEveryFailingCommand(t *testing.T) {
	t.Parallel()
	const secret = "Sup3r-s3cr3t_pw"
	server, err := url.Parse(testdb.ServerURL(t))
	require.NoError(t, err)
	server.User = url.UserPassword("root", secret)
	server.Path = "/relay_no_such_database_for_redaction"
	missingDB := server.String()

	unreachable := "postgres://relay:" + secret + "@127.0.0.1:1/relay?sslmode=disable&connect_timeout=2"
	encoded := "postgres://relay:" + url.QueryEscape(secret+"@:/?") + "@127.0.0.1:1/relay?sslmode=disable&connect_timeout=2"
	dsn := "host=127.0.0.1 port=1 user=relay password=" + secret + " dbname=relay connect_timeout=2 sslmode=disable"
	unparsable := "postgres://relay:" + secret + "@[::1/relay"

	cfgFile := filepath.Join(t.TempDir(), "relay.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("database_url: "+unreachable+"\nlog_level: debug\n"), 0o600))

	debugJSON := map[string]string{"RELAY_LOG_LEVEL": "debug", "RELAY_LOG_FORMAT": "json"}
	withURL := func(u string, env map[string]string) map[string]string {
		out := map[string]string{"RELAY_DATABASE_URL": u}
		for k, v := range env {
			out[k] = v
		}
		return out
	}
	commands := [][]string{{"worker"}, {"worker", "--until-idle"}, {"publish", "-"}, {"migrate", "up"}, {"migrate", "status"}, {"status"}}
	for _, u := range []string{unreachable, encoded, dsn, unparsable, missingDB} {
		for _, args := range commands {
			for _, how := range []string{"flag", "env"} {
				var r result
				if how == "flag" {
					r = run(t, nil, `{"fileId":"a.js","pois":[]}`, map[string]string{"RELAY_LOG_LEVEL": "debug"},
						append([]string{"--database-url", u}, args...)...)
				} else {
					r = run(t, nil, `{"fileId":"a.js","pois":[]}`, withURL(u, debugJSON), args...)
				}
				out := r.stdout + r.stderr
				require.NotEqual(t, cli.ExitOK, r.code, "%s via %s: %s", args, how, out)
				require.NotContains(t, out, secret, "%s via %s leaked the password", args, how)
				require.NotContains(t, out, url.QueryEscape(secret+"@:/?"), "%s via %s leaked the encoded password", args, how)
				require.NotEmpty(t, strings.TrimSpace(r.stderr), "%s via %s says nothing", args, how)
			}
		}
	}
	for _, args := range commands {
		r := run(t, nil, "", nil, append([]string{"--config", cfgFile}, args...)...)
		require.NotEqual(t, cli.ExitOK, r.code)
		require.NotContains(t, r.stdout+r.stderr, secret, "%s with a config file leaked the password", args)
	}
	// --help of every command, with the URL in the environment.
	for _, args := range append(commands, []string{}) {
		r := run(t, nil, "", withURL(unreachable, nil), append(args, "--help")...)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		require.NotContains(t, r.stdout+r.stderr, secret)
	}
}

// The password shapes the old regular expressions printed in full: pgx
// accepts '#' and '?' in a userinfo password (and connects), so they reached
// connection errors; '/', ' ' and a second '@' reached parse errors. Every
// way a URL arrives: flag, environment, config file.
func TestMain_ReportedPasswordShapesNeverPrinted(t *testing.T) {
	t.Parallel()
	const tail = "@127.0.0.1:1/relay?sslmode=disable&connect_timeout=2"
	for _, pw := range []string{"s3cr3t#Pss", "s3cr3t?Pss", "s3cr3t/Pss", "s3cr3t Pss", "s3cr3t@Pss", "s3cr3t%Pss"} {
		u := "postgres://adv_pw:" + pw + tail
		cfgFile := filepath.Join(t.TempDir(), "relay.yaml")
		require.NoError(t, os.WriteFile(cfgFile, []byte("database_url: '"+u+"'\n"), 0o600))
		for _, args := range [][]string{{"worker"}, {"migrate", "status"}, {"publish", "-"}, {"demo"}} {
			for _, how := range []string{"flag", "env", "config"} {
				var r result
				switch how {
				case "flag":
					r = run(t, nil, "", nil, append([]string{"--database-url", u}, args...)...)
				case "env":
					r = run(t, nil, "", map[string]string{"RELAY_DATABASE_URL": u, "RELAY_LOG_LEVEL": "debug"}, args...)
				case "config":
					r = run(t, nil, "", nil, append([]string{"--config", cfgFile}, args...)...)
				}
				out := r.stdout + r.stderr
				require.NotEqual(t, cli.ExitOK, r.code, "%q %s via %s: %s", pw, args, how, out)
				require.NotContains(t, out, "s3cr3t", "%q %s via %s leaked the password", pw, args, how)
				require.NotContains(t, out, "Pss", "%q %s via %s leaked the password's tail", pw, args, how)
				require.Contains(t, r.stderr, "adv_pw:xxxxx@127.0.0.1:1/relay", "%q %s via %s", pw, args, how)
			}
		}
	}
}

// The demo's closing hint printed the configured URL through the old
// regular expressions: postgres://root:s3cr3t#Pss@... in full.
func TestDemo_HintNeverShowsThePassword(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	server, err := url.Parse(db.URL)
	require.NoError(t, err)
	// The test server trusts local connections: any password connects.
	withPW := server.Scheme + "://" + server.User.Username() + ":s3cr3t#Pss@" + server.Host + server.Path + "?" + server.RawQuery
	r := run(t, nil, "", nil, "demo", "--database-url", withPW, "--database-schema", db.Schema)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.NotContains(t, r.stdout+r.stderr, "s3cr3t")
	require.Contains(t, r.stdout, `psql "`+server.Scheme+"://"+server.User.Username()+":xxxxx@"+server.Host+server.Path)
}

// A misspelt key in a config file was ignored (and the default URL used);
// it is a usage error naming the key, and the value is not printed.
func TestMain_ConfigFileTypoIsAUsageError(t *testing.T) {
	t.Parallel()
	cfgFile := filepath.Join(t.TempDir(), "relay.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("databse_url: 'postgres://adv_pw:s3cr3t#Pss@127.0.0.1:1/relay'\n"), 0o600))
	r := run(t, nil, "", nil, "--config", cfgFile, "migrate", "status")
	require.Equal(t, cli.ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `unknown key "databse_url" (did you mean "database_url"?)`)
	require.NotContains(t, r.stdout+r.stderr, "s3cr3t")
}

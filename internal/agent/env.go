package agent

import (
	"os"
	"strings"
)

// AllowedEnv lists the variables an agent inherits from relay's environment
// when Runner.Env is nil. Everything else is left out: RELAY_* (the database
// URL among them), PG* (PGPASSWORD, PGPASSFILE, PGSERVICEFILE, ...), cloud
// and API credentials, SSH_AUTH_SOCK, proxies (which can carry passwords).
// An agent that needs more is given it explicitly, e.g.
// --agent "env API_KEY_FILE=/etc/agent/key ./agent.sh".
var AllowedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TZ", "TMPDIR", "TERM"}

// The variables relay itself sets for every attempt; they replace any of the
// same name in Runner.Env.
const (
	EnvJobID   = "RELAY_JOB_ID"
	EnvItemID  = "RELAY_ITEM_ID"
	EnvAttempt = "RELAY_ATTEMPT"
	EnvWorkdir = "RELAY_WORKDIR"
)

// allowedEnv reports whether the variable kv (NAME=value) is in AllowedEnv.
func allowedEnv(kv string) bool {
	name, _, ok := strings.Cut(kv, "=")
	if !ok {
		return false
	}
	for _, a := range AllowedEnv {
		if prefix, wild := strings.CutSuffix(a, "*"); wild && strings.HasPrefix(name, prefix) || name == a {
			return true
		}
	}
	return false
}

// baseEnv is the agent's environment before relay's RELAY_* variables: the
// allow-listed part of this process's environment, or Runner.Env as given
// without any RELAY_* variable.
func (r *Runner) baseEnv() []string {
	var env []string
	if r.Env != nil {
		for _, kv := range r.Env {
			if !strings.HasPrefix(kv, "RELAY_") {
				env = append(env, kv)
			}
		}
		return env
	}
	for _, kv := range os.Environ() {
		if allowedEnv(kv) {
			env = append(env, kv)
		}
	}
	return env
}

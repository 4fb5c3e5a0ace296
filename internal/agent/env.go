package agent

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// AllowedEnv lists the variables an agent inherits from relay's environment
// when Runner.Env is nil. Everything else is left out: RELAY_* (the database
// URL among them), PG* (PGPASSWORD, PGPASSFILE, PGSERVICEFILE, ...), cloud
// and API credentials, SSH_AUTH_SOCK, proxies (which can carry passwords).
// An agent that needs more is given it by name in agent_env (--agent-env
// API_KEY, or API_KEY=VALUE): see ResolveEnv.
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

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckEnvName returns an error saying why the variable name cannot be
// given to an agent: it is not a variable name, or it is relay's own
// (RELAY_*) or the database's (PG*).
func CheckEnvName(name string) error {
	switch {
	case !envNameRE.MatchString(name):
		return fmt.Errorf("%q is not a variable name (letters, digits and '_', not starting with a digit)", name)
	case strings.HasPrefix(name, "RELAY_"):
		return fmt.Errorf("%s: RELAY_* variables are relay's own (its configuration, the database URL among them, "+
			"and the RELAY_JOB_ID, RELAY_ITEM_ID, RELAY_ATTEMPT and RELAY_WORKDIR it sets for each attempt); "+
			"relay gives none of them to agents", name)
	case strings.HasPrefix(name, "PG"):
		return fmt.Errorf("%s: PG* variables are the database's connection settings and credentials "+
			"(PGPASSWORD, PGPASSFILE, PGSERVICEFILE, ...); relay gives none of them to agents", name)
	}
	return nil
}

// ParseEnvSpec splits one agent_env entry, NAME or NAME=VALUE, and checks
// its name (CheckEnvName). Its errors never show the value.
func ParseEnvSpec(spec string) (name, value string, hasValue bool, err error) {
	name, value, hasValue = strings.Cut(spec, "=")
	if err := CheckEnvName(name); err != nil {
		return "", "", false, err
	}
	return name, value, hasValue, nil
}

// ResolveEnv turns agent_env entries into the NAME=VALUE variables to add to
// agents' environment, in the entries' order: NAME=VALUE as given, NAME with
// its value in relay's environment as relay started (lookup; an error when
// it has none). A later entry for a name replaces an earlier one. Errors
// name the entry, never a value.
func ResolveEnv(specs []string, lookup func(string) (string, bool)) ([]string, error) {
	var out []string
	for _, spec := range specs {
		name, value, hasValue, err := ParseEnvSpec(spec)
		if err != nil {
			return nil, fmt.Errorf("agent_env: %w", err)
		}
		if !hasValue {
			v, ok := lookup(name)
			if !ok {
				return nil, fmt.Errorf("agent_env: %s: relay's environment has no %s to pass on; "+
					"set it where relay starts, or give its value as %s=VALUE", name, name, name)
			}
			value = v
		}
		out = slices.DeleteFunc(out, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
		out = append(out, name+"="+value)
	}
	return out, nil
}

// EnvNames returns the sorted, distinct names of the NAME=VALUE variables
// (or bare names) in env.
func EnvNames(env []string) []string {
	names := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// MissingEnv returns the names in need that have no variable in env
// (NAME=VALUE), sorted.
func MissingEnv(need, env []string) []string {
	have := EnvNames(env)
	var missing []string
	for _, n := range need {
		if _, found := slices.BinarySearch(have, n); !found {
			missing = append(missing, n)
		}
	}
	slices.Sort(missing)
	return slices.Compact(missing)
}

// agentEnv is the agent's whole environment before relay's RELAY_*
// variables: the base (baseEnv), then, when the agent runs as another user,
// that user's HOME, USER and LOGNAME, then AddEnv; a later variable of a
// name replaces an earlier one.
func (r *Runner) agentEnv() []string {
	env := r.baseEnv()
	set := func(kv string) {
		name, _, _ := strings.Cut(kv, "=")
		env = slices.DeleteFunc(env, func(e string) bool { return strings.HasPrefix(e, name+"=") })
		env = append(env, kv)
	}
	if r.User.switches() {
		set("HOME=" + r.User.Home)
		set("USER=" + r.User.Name)
		set("LOGNAME=" + r.User.Name)
	}
	for _, kv := range r.AddEnv {
		set(kv)
	}
	return env
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

// checkAddEnv refuses an AddEnv variable that is not NAME=VALUE or whose
// name CheckEnvName refuses (callers check them first; this is the last
// line).
func (r *Runner) checkAddEnv() error {
	for _, kv := range r.AddEnv {
		name, _, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("agent_env: %q is not NAME=VALUE", name)
		}
		if err := CheckEnvName(name); err != nil {
			return fmt.Errorf("agent_env: %w", err)
		}
	}
	return nil
}

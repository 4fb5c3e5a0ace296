package cli

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/config"
	"github.com/relay-dev/relay/deadletter"
	"github.com/relay-dev/relay/deadletter/items"
	"github.com/relay-dev/relay/internal/agent"
	"github.com/relay-dev/relay/internal/mapreduce"
	"github.com/relay-dev/relay/worker"
)

func newMapReduceCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mapreduce",
		Short: "Run an agent command over a list of JSON work items, with retries and a dead-letter queue",
		Long: `A MapReduce job runs an agent command once per JSON work item. Each item is a
River job on the "mapreduce" queue; a failed attempt is retried with
exponential backoff, and an item that fails max_retries+1 times (or at once,
for error types in --dlq-include-errors) is dead-lettered into
dead_lettered_items, where the eight 'relay dlq' commands manage it.
docs/dead_lettered_items.md describes the tables, error types and policy.`,
	}
	cmd.AddCommand(newMapReduceRunCmd(a), newMapReduceStatusCmd(a), newMapReduceResumeCmd(a))
	return cmd
}

func newMapReduceRunCmd(a *app) *cobra.Command {
	var (
		input, agentCmd, jobID, include, exclude string
		maxRetries, parallel                     int
		timeout, backoff                         time.Duration
		wait, asJSON                             bool
	)
	cmd := &cobra.Command{
		Use:   "run --input FILE --agent CMD",
		Short: "Enqueue a MapReduce job (and, with --wait, work it to the end here)",
		Long: `Run reads work items from --input (a JSON array, or one JSON value per line;
"-" is standard input). An item's id is its "id" field (string or number) or
its position from 1. Invalid items are reported with their line numbers and
nothing is enqueued. The job and one River job per item are inserted in one
transaction.

Item ids are at most 1024 bytes, without control characters; items are at
most 16 MiB of UTF-8 JSON, without \u0000 or lone surrogates (\ud800), which
PostgreSQL cannot store. Invalid input is a usage error (exit code 2).

--agent is split into words like a shell would, without any expansion, and
run without a shell; write --agent "sh -c '...'" for pipes or variables. Its
program is resolved when the job is submitted: a path with a slash against
the current directory, a bare name in PATH; it must be an executable file.
The job stores the absolute path, so any worker runs the same program.

The agent is run once per attempt with the item's JSON on stdin, in a fresh
working directory. Its environment is an allow-list: RELAY_JOB_ID,
RELAY_ITEM_ID, RELAY_ATTEMPT and RELAY_WORKDIR, plus only PATH, HOME, USER,
LOGNAME, SHELL, LANG, LANGUAGE, LC_*, TZ, TMPDIR and TERM from relay's own
environment, plus what agent_env adds: --agent-env NAME (repeatable) passes
NAME from relay's environment as relay started, --agent-env NAME=VALUE sets
it (a value on the command line is visible to every process on the host:
prefer NAME). RELAY_* and PG* names are refused: they are relay's own and
the database's credentials. The job records the names, never the values,
and 'relay mapreduce status' shows them; whoever runs the job's agents must
give every one of them (see 'relay dlq retry --help'). Without --wait the
worker gives its agents its own agent_env, so a VALUE here is refused.
Item data never reaches the command line. Exit 0 is success and stdout (at
most 1 MiB; more fails the attempt with ResourceExhausted) is the item's
result; exit 65 (EX_DATAERR) means "invalid item" (ValidationFailed); any
other exit is a failure. When the agent exits, every process left in its
process group is killed; a process started with setsid escapes that, and
relay cannot stop it.

relay runs no agent as root, who could read relay's database password in
/proc/<relay pid>/environ whatever relay does. When relay runs as root,
agents run as agent_user (--agent-user, e.g. nobody: its uid and gid, no
supplementary groups, its HOME), in attempt directories that user owns, and
until agent_user is set relay refuses to start them. The agent's program
and --mapreduce-workdir must be reachable by that user.

Each attempt's stdout and stderr go to a log file (at most 8 MiB: the first
and last 4 MiB are kept) under --mapreduce-workdir, by default relay/mapreduce
in the user's cache directory ($XDG_CACHE_HOME or ~/.cache), or
/var/cache/relay/mapreduce when agents run as agent_user. The workdir is
created 0700 and must not be a symlink, someone else's or writable by
others; attempts' directories are 0700 and logs 0600 (with agent_user, the
directories above an attempt's are 0711 and the attempt's is that user's).

Without --wait a running 'relay worker' works the items. With --wait this
process works them, and only them, on a queue of the job's own (--parallel
agents at once), shows progress on stderr and prints the job summary; the
exit code is 1 when any item did not succeed. A first Ctrl-C stops starting
agents and waits up to --shutdown-timeout for running ones; a second kills
them at once. An interrupted job keeps its items: 'relay mapreduce resume
JOB_ID --wait' goes on with them (exit code 130).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if input == "" || agentCmd == "" {
				return usageError{errors.New("--input and --agent are required")}
			}
			argv, err := agent.Split(agentCmd)
			if err != nil {
				return usageError{err}
			}
			if argv, err = resolveAgent(argv); err != nil {
				return usageError{err}
			}
			job := &mapreduce.Job{ID: jobID, Agent: agent.Join(argv), InputPath: input,
				MaxRetries: intOrDefault(maxRetries, -1, a.cfg.MapReduceMaxRetries), Parallel: intOrDefault(parallel, 0, a.cfg.MapReduceParallel),
				Timeout: timeout, RetryBackoff: backoff, DLQMaxItems: a.cfg.DLQMaxItems}
			if job.Timeout == 0 {
				job.Timeout = a.cfg.MapReduceTimeout
			}
			if job.ID == "" {
				var r [2]byte
				_, _ = rand.Read(r[:])
				job.ID = mapreduce.NewJobID(time.Now(), r)
			}
			if job.Policy.IncludeErrors, err = agent.ParseErrorTypeList(include); err != nil {
				return usageError{fmt.Errorf("--dlq-include-errors: %w", err)}
			}
			if job.Policy.ExcludeErrors, err = agent.ParseErrorTypeList(exclude); err != nil {
				return usageError{fmt.Errorf("--dlq-exclude-errors: %w", err)}
			}
			var agents *agentSetup
			if wait {
				// This process runs the agents: it must be able to, and
				// gives them agent_env's variables.
				if agents, err = agentsHere(a); err != nil {
					return err
				}
				if err := agent.CheckProgram(argv[0], agents.user); err != nil {
					return usageError{fmt.Errorf("--agent: %w", err)}
				}
				job.AgentEnv = agent.EnvNames(agents.env)
			} else if job.AgentEnv, err = agentEnvNames(cmd, a); err != nil {
				return err
			}
			if err := job.Validate(); err != nil {
				return usageError{err}
			}
			if job.Timeout+time.Minute >= a.cfg.RescueStuckJobsAfter {
				fmt.Fprintf(a.env.Stderr, "relay mapreduce: warning: --timeout %s is close to rescue_stuck_jobs_after %s; "+
					"River may rescue (re-run) an agent that is still running. Raise --rescue-stuck-jobs-after.\n",
					job.Timeout, a.cfg.RescueStuckJobsAfter)
			}
			if wait {
				// Only this process works the job's items.
				job.Queue = mapreduce.WaitQueue(job.ID)
			}
			items, err := readItems(a, input)
			if err != nil {
				return err
			}
			pool, err := a.open(ctx, "mapreduce")
			if err != nil {
				return err
			}
			defer pool.Close()
			client, err := worker.NewInsertClient(pool, worker.ConfigFrom(a.cfg), a.logger)
			if err != nil {
				return err
			}
			err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				return mapreduce.NewStore(pool).CreateTx(ctx, tx, client, job, items)
			})
			if errors.Is(err, mapreduce.ErrJobExists) {
				return exitError{code: ExitRuntime, msg: fmt.Sprintf("job %q already exists; pick another --job-id, "+
					"or continue it with 'relay mapreduce resume %s'", job.ID, job.ID)}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.env.Stderr, "relay mapreduce: job %s: %d items enqueued (max %d retries, timeout %s, backoff %s%s)\n",
				job.ID, len(items), job.MaxRetries, job.Timeout, job.RetryBackoff, agentEnvNote(job.AgentEnv))
			if !wait {
				fmt.Fprintf(a.out(), "%s\n", job.ID)
				fmt.Fprintf(a.env.Stderr, "relay mapreduce: a running 'relay worker' works them; follow with 'relay mapreduce status %s'\n", job.ID)
				return nil
			}
			return waitAndSummarize(ctx, a, pool, job, agents, job.Parallel, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&input, "input", "", `work items: a JSON array or newline-delimited JSON ("-" for stdin)`)
	f.StringVar(&agentCmd, "agent", "", "agent command, split into words without a shell (see above)")
	f.StringVar(&jobID, "job-id", "", "job id (default mr-<UTC time>-<random>)")
	f.IntVar(&maxRetries, "max-retries", -1, "retries per item before it is dead-lettered (default --mapreduce-max-retries)")
	f.IntVar(&parallel, "parallel", 0, "agents run at once with --wait (default --mapreduce-parallel)")
	f.DurationVar(&timeout, "timeout", 0, "deadline for one agent run (default --mapreduce-timeout)")
	f.DurationVar(&backoff, "retry-backoff", time.Second, "delay before the first retry; doubles per attempt, capped at 10m")
	f.StringVar(&include, "dlq-include-errors", string(agent.ErrorTypeValidationFailed),
		`error types dead-lettered at the first failure ("none" for none)`)
	f.StringVar(&exclude, "dlq-exclude-errors", string(agent.ErrorTypeStorage),
		`error types never dead-lettered, retried forever ("none" for none)`)
	f.BoolVar(&wait, "wait", false, "work the items in this process and print the job summary")
	f.BoolVar(&asJSON, "json", false, "with --wait, print the summary as JSON")
	return cmd
}

// resolveAgent makes the agent's program an absolute path to an executable
// file: a path with a slash is taken against the current directory, a bare
// name is looked up in PATH. Whoever works the job later, from whatever
// directory, runs the same program.
func resolveAgent(argv []string) ([]string, error) {
	prog, path := argv[0], argv[0]
	if !strings.ContainsRune(prog, '/') {
		p, err := exec.LookPath(prog)
		if err != nil {
			return nil, fmt.Errorf("--agent: program %q not found in PATH", prog)
		}
		path = p
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("--agent: program %q: %w", prog, err)
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("--agent: program %s does not exist", path)
	case err != nil:
		return nil, fmt.Errorf("--agent: program %s: %w", path, err)
	case fi.IsDir():
		return nil, fmt.Errorf("--agent: program %s is a directory", path)
	case fi.Mode()&0o111 == 0:
		return nil, fmt.Errorf("--agent: program %s is not executable (chmod +x it, or write --agent \"sh %s\")", path, prog)
	}
	return append([]string{path}, argv[1:]...), nil
}

// agentSetup is what a process that runs MapReduce agents gives them.
type agentSetup struct {
	// env is agent_env resolved: NAME=VALUE.
	env []string
	// user is agent_user; nil runs agents as relay's user (never root).
	user *agent.User
	// workdir is where the agents run and log (mapreduce_workdir).
	workdir string
}

// workerConfig is the MapReduce worker's configuration for these agents,
// parallel of them at once.
func (s *agentSetup) workerConfig(parallel int) mapreduce.WorkerConfig {
	return mapreduce.WorkerConfig{Parallel: parallel, Workdir: s.workdir, Env: s.env, User: s.user}
}

// resolveAgents reads agent_env and agent_user: NAME entries take their
// value from relay's environment as relay started (a.env.LookupEnv, the
// snapshot cmd/relay takes before unsetting RELAY_*).
func resolveAgents(a *app) (*agentSetup, error) {
	env, err := agent.ResolveEnv(a.cfg.AgentEnv, a.env.LookupEnv)
	if err != nil {
		return nil, usageError{err}
	}
	var u *agent.User
	if a.cfg.AgentUser != "" {
		if u, err = agent.LookupUser(a.cfg.AgentUser); err != nil {
			return nil, usageError{err}
		}
	}
	return &agentSetup{env: env, user: u, workdir: cmp.Or(a.cfg.MapReduceWorkdir, agent.DefaultBaseDirFor(u))}, nil
}

// agentsHere is resolveAgents for a command that runs agents in this
// process (--wait): it refuses when relay runs as root without agent_user
// (or cannot switch to it), and prepares the workdir.
func agentsHere(a *app) (*agentSetup, error) {
	s, err := resolveAgents(a)
	if err != nil {
		return nil, err
	}
	if err := agent.CheckRunAs(s.user); err != nil {
		return nil, usageError{err}
	}
	if err := agent.PrepareBaseDir(s.workdir, s.user); err != nil {
		return nil, usageError{fmt.Errorf("--mapreduce-workdir: %w", err)}
	}
	return s, nil
}

// agentEnvNames returns the names agent_env gives, for a command that runs
// no agent itself (no --wait): they are recorded on the job, and whoever
// runs its agents must give them. A value given with --agent-env would
// reach no agent, so it is refused.
func agentEnvNames(cmd *cobra.Command, a *app) ([]string, error) {
	if cmd.Flags().Changed("agent-env") {
		specs, _ := cmd.Flags().GetStringArray("agent-env")
		for _, spec := range specs {
			if name, _, ok := strings.Cut(spec, "="); ok {
				return nil, usageError{fmt.Errorf("--agent-env %s=...: without --wait this process runs no agent, so the value "+
					"would reach none ('relay worker' gives its agents its own agent_env); write --agent-env %s to record "+
					"that the job's agents need it, or add --wait", name, name)}
			}
		}
	}
	names := make([]string, 0, len(a.cfg.AgentEnv))
	for _, spec := range a.cfg.AgentEnv {
		name, _, _, err := agent.ParseEnvSpec(spec)
		if err != nil {
			return nil, usageError{fmt.Errorf("agent_env: %w", err)}
		}
		names = append(names, name)
	}
	return agent.EnvNames(names), nil
}

// requireAgentEnv refuses to run job's agents without a variable the job
// records (relay never stores values, so they must be given again), and
// adds the names given here to the job's.
func requireAgentEnv(job *mapreduce.Job, s *agentSetup) error {
	if missing := agent.MissingEnv(job.AgentEnv, s.env); len(missing) > 0 {
		return usageError{fmt.Errorf("job %s's agents are given %s (recorded on the job; relay never stores values): "+
			"give %s again, with --agent-env NAME (from relay's environment) or --agent-env NAME=VALUE, or in agent_env",
			job.ID, strings.Join(missing, ", "), pluralIt(len(missing)))}
	}
	job.AgentEnv = agent.EnvNames(append(job.AgentEnv, agent.EnvNames(s.env)...))
	return nil
}

func pluralIt(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// agentEnvNote is ", agent_env A B" for a job whose agents are given A and
// B, or "".
func agentEnvNote(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return ", agent_env " + strings.Join(names, " ")
}

func intOrDefault(v, unset, def int) int {
	if v == unset {
		return def
	}
	return v
}

// readItems reads and checks the input file, reporting every bad item.
func readItems(a *app, path string) ([]mapreduce.Item, error) {
	var r io.Reader = a.env.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, usageError{fmt.Errorf("error opening --input: %w", err)}
		}
		defer f.Close()
		r = f
	}
	items, bad, err := mapreduce.ParseInput(r)
	if err != nil {
		return nil, exitError{code: ExitUsage, msg: fmt.Sprintf("%s: %v", path, err)}
	}
	for _, b := range bad {
		fmt.Fprintf(a.env.Stderr, "%s: %s\n", path, b.Error())
	}
	if len(bad) > 0 {
		return nil, exitError{code: ExitUsage, msg: fmt.Sprintf("%d invalid items in %s; nothing enqueued", len(bad), path)}
	}
	return items, nil
}

// ExitInterrupted is the exit code of a --wait run stopped by Ctrl-C (or
// SIGTERM), as a shell reports a command killed by SIGINT.
const ExitInterrupted = 130

// waitAndSummarize works job's items in this process, then prints the
// summary; it fails when any item did not succeed.
func waitAndSummarize(ctx context.Context, a *app, pool *pgxpool.Pool, job *mapreduce.Job, agents *agentSetup, parallel int, asJSON bool) error {
	c, err := workInProcess(ctx, a, pool, job.ID, agents, parallel)
	if err != nil && ctx.Err() != nil {
		return interrupted(a, pool, job.ID)
	}
	if err != nil {
		return err
	}
	if err := printJobSummary(ctx, a, pool, job, c, asJSON); err != nil {
		return err
	}
	if notDone := c.Total - c.Succeeded; notDone > 0 {
		return exitError{code: ExitRuntime, msg: fmt.Sprintf("%d of %d items did not succeed (%d dead-lettered); "+
			"see 'relay dlq list --job-id %s'", notDone, c.Total, c.DeadLettered, job.ID)}
	}
	return nil
}

// interrupted says where an interrupted --wait run left its job and how to
// go on.
func interrupted(a *app, pool *pgxpool.Pool, jobID string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msg := fmt.Sprintf("job %s interrupted", jobID)
	if c, err := mapreduce.NewStore(pool).Counts(ctx, jobID); err == nil {
		msg += fmt.Sprintf(": %d of %d items done (%d succeeded, %d dead-lettered), %d left", c.Done(), c.Total,
			c.Succeeded, c.DeadLettered, c.Total-c.Done())
	}
	msg += fmt.Sprintf(". Go on with 'relay mapreduce resume %s --wait', or hand the rest to a running "+
		"'relay worker' with 'relay mapreduce resume %s'", jobID, jobID)
	return exitError{code: ExitInterrupted, msg: msg}
}

// adoptInterval is how often a --wait run takes back items of its job that
// wait on another queue (e.g. retried by a 'relay worker' that was running
// them when the run started).
const adoptInterval = 5 * time.Second

// workInProcess runs an in-process worker on jobID's own queue
// (mapreduce.WaitQueue), so that it works that job's items and no other's,
// until jobID has no item left to run, with progress on stderr. Its agents
// get what agents (agentsHere) says. The job's items waiting on any other
// queue are moved to it first. The first interrupt (ctx cancelled) stops it
// starting agents and waits up to shutdown_timeout for running ones; a
// second (a.env.StopNow) kills them.
func workInProcess(ctx context.Context, a *app, pool *pgxpool.Pool, jobID string, agents *agentSetup, parallel int) (*mapreduce.Counts, error) {
	cfg := worker.ConfigFrom(a.cfg)
	// River's workers log from their own goroutines while progress is
	// printed here: both go through one locked writer.
	stderr := &lockedWriter{w: a.env.Stderr}
	level, _ := config.ParseLogLevel(a.cfg.LogLevel)
	var h slog.Handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})
	if a.cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})
	}
	logger := slog.New(h)
	store := mapreduce.NewStore(pool)
	queue := mapreduce.WaitQueue(jobID)
	if _, err := store.MoveQueued(ctx, jobID, queue); err != nil {
		return nil, err
	}
	killNow := make(chan struct{})
	agentsAtOnce := a.cfg.MapReduceParallel
	if parallel > 0 {
		agentsAtOnce = parallel
	}
	mr := agents.workerConfig(agentsAtOnce)
	mr.Queue, mr.StopNow = queue, killNow
	cfg.Queues, cfg.Extensions = []string{queue}, []worker.Extension{mapreduce.NewAgents(mr)}
	w, err := worker.New(pool, cfg, logger)
	if err != nil {
		return nil, err
	}

	done := make(chan struct{})
	defer close(done)
	go watchInterrupts(ctx, done, a.env.StopNow, killNow, stderr, store, jobID, cfg.ShutdownTimeout)
	go func() {
		t := time.NewTicker(adoptInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-done:
				return
			case <-t.C:
				if n, err := store.MoveQueued(ctx, jobID, queue); err == nil && n > 0 {
					logger.InfoContext(ctx, "took back items of the job that waited on another queue",
						slog.String("job_id", jobID), slog.Int("items", n))
				}
			}
		}
	}()

	start := time.Now()
	last := time.Time{}
	var counts *mapreduce.Counts
	err = a.announced(ctx, pool, w.ID(), func(ctx context.Context) error {
		var err error
		counts, err = mapreduce.RunUntilDone(ctx, w, pool, logger, jobID, func(c *mapreduce.Counts) {
			if time.Since(last) < 500*time.Millisecond && c.Live() > 0 {
				return
			}
			last = time.Now()
			fmt.Fprintf(stderr, "relay mapreduce: %s: %d/%d done (%d succeeded, %d dead-lettered); %d running, %d retrying, %d pending [%s]\n",
				jobID, c.Done(), c.Total, c.Succeeded, c.DeadLettered, c.Running, c.Retrying, c.Pending,
				time.Since(start).Round(100*time.Millisecond))
		})
		return err
	})
	return counts, err
}

// watchInterrupts tells the user, at the first interrupt, what the run is
// waiting for, and closes killNow at the second.
func watchInterrupts(ctx context.Context, done <-chan struct{}, stopNow <-chan struct{}, killNow chan<- struct{},
	stderr io.Writer, store *mapreduce.Store, jobID string, grace time.Duration) {
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	running := "the running agents"
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	if c, err := store.Counts(cctx, jobID); err == nil {
		running = pluralize(c.Running, "running agent")
	}
	cancel()
	if grace > 0 {
		fmt.Fprintf(stderr, "relay mapreduce: interrupted: starting no more agents; waiting up to %s for %s to stop; "+
			"press Ctrl-C again to kill them now\n", grace, running)
	} else {
		fmt.Fprintf(stderr, "relay mapreduce: interrupted: starting no more agents; waiting for %s to stop; "+
			"press Ctrl-C again to kill them now\n", running)
	}
	select {
	case <-done:
	case <-stopNow:
		fmt.Fprintf(stderr, "relay mapreduce: interrupted again: killing %s\n", running)
		close(killNow)
	}
}

// lockedWriter serializes writes from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// JobSummary is `relay mapreduce status --json`: the job, where its items
// are, and its dead-letter metrics.
type JobSummary struct {
	Job   *mapreduce.Job    `json:"job"`
	Items *mapreduce.Counts `json:"items"`
	DLQ   *items.Stats      `json:"dlq"`
}

func printJobSummary(ctx context.Context, a *app, pool *pgxpool.Pool, job *mapreduce.Job, c *mapreduce.Counts, asJSON bool) error {
	st, err := items.NewStore(pool, a.logger).Stats(ctx, job.ID)
	if err != nil {
		return err
	}
	out := a.out()
	if asJSON {
		return a.printJSON(JobSummary{Job: job, Items: c, DLQ: st})
	}
	fmt.Fprintf(out, "MapReduce job %s\n", job.ID)
	fmt.Fprintf(out, "  agent: %s\n  input: %s (%d items)\n  max retries: %d, timeout: %s, retry backoff: %s\n",
		job.Agent, job.InputPath, job.ItemCount, job.MaxRetries, job.Timeout, job.RetryBackoff)
	if len(job.AgentEnv) > 0 {
		fmt.Fprintf(out, "  agent env: %s (names only: relay never stores the values)\n", strings.Join(job.AgentEnv, ", "))
	} else {
		fmt.Fprintf(out, "  agent env: none (only the allow-listed variables)\n")
	}
	fmt.Fprintf(out, "\nItems:\n")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, r := range []struct {
		name string
		n    int
	}{{"pending", c.Pending}, {"running", c.Running}, {"failed, retrying", c.Retrying}, {"succeeded", c.Succeeded},
		{"dead-lettered", c.DeadLettered}, {"awaiting DLQ capture", c.AwaitingCapture}, {"unfinished (resume)", c.Unfinished}} {
		fmt.Fprintf(tw, "  %s\t%d\n", r.name, r.n)
	}
	fmt.Fprintf(tw, "  total\t%d\n", c.Total)
	_ = tw.Flush()
	fmt.Fprintf(out, "\nDead-letter queue:\n")
	printDLQMetrics(out, st, time.Now())
	return nil
}

func printDLQMetrics(out io.Writer, st *items.Stats, now time.Time) {
	fmt.Fprintf(out, "  items: %d (reprocess eligible %d, manual review %d, reprocessing %d)\n",
		st.Total, st.ReprocessEligible, st.ManualReviewRequired, st.ByStatus[string(items.StatusReprocessing)])
	if st.Reprocessed > 0 {
		fmt.Fprintf(out, "  reprocessed, awaiting 'relay dlq clear': %d\n", st.Reprocessed)
	}
	if st.Oldest != nil {
		fmt.Fprintf(out, "  oldest: %s\n  newest: %s\n", whenAgo(*st.Oldest, now), whenAgo(*st.Newest, now))
	}
	for _, t := range st.ErrorTypes {
		fmt.Fprintf(out, "  %s: %d (%.0f%%)\n", t.ErrorType, t.Count, 100*t.Share)
	}
}

// whenAgo formats t as "2026-01-21 14:25:30 UTC (3 minutes ago)".
func whenAgo(t, now time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05 UTC") + " (" + agoText(now.Sub(t)) + ")"
}

func agoText(d time.Duration) string {
	switch {
	case d < 0:
		return "in the future"
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return pluralize(int(d/time.Minute), "minute") + " ago"
	case d < 48*time.Hour:
		return pluralize(int(d/time.Hour), "hour") + " ago"
	default:
		return pluralize(int(d/(24*time.Hour)), "day") + " ago"
	}
}

func pluralize(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

func newMapReduceStatusCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status JOB_ID",
		Short: "Where a MapReduce job's items are, with its dead-letter metrics",
		Long: `Status shows what the job runs with, including the names of the variables
its agents are given (agent env; relay never stores their values), counts the
job's items: pending (queued, not yet tried), running, failed and retrying,
succeeded, dead-lettered, awaiting DLQ capture (River ended the item's job
but the DLQ write failed; the worker's sweep captures it) and unfinished (no
River job left; 'relay mapreduce resume' re-runs them), and prints the job's
dead-letter metrics. --json has the names in job.agent_env.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			pool, err := a.open(ctx, "mapreduce")
			if err != nil {
				return err
			}
			defer pool.Close()
			job, err := loadJob(ctx, pool, args[0])
			if err != nil {
				return err
			}
			c, err := mapreduce.NewStore(pool).Counts(ctx, job.ID)
			if err != nil {
				return err
			}
			return printJobSummary(ctx, a, pool, job, c, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func loadJob(ctx context.Context, pool *pgxpool.Pool, id string) (*mapreduce.Job, error) {
	job, err := mapreduce.NewStore(pool).Job(ctx, id)
	if errors.Is(err, mapreduce.ErrJobNotFound) {
		hint := ""
		if id == "resolve_file" {
			hint = " (resolve_file rows in dead_lettered_items are River-discarded batches: re-publish their files)"
		}
		return nil, exitError{code: ExitRuntime, msg: fmt.Sprintf("no MapReduce job %q%s", id, hint)}
	}
	return job, err
}

func newMapReduceResumeCmd(a *app) *cobra.Command {
	var (
		includeDLQ, wait, asJSON bool
		parallel, maxRetries     int
	)
	cmd := &cobra.Command{
		Use:   "resume JOB_ID",
		Short: "Re-run a MapReduce job's unfinished items (and, optionally, its dead-lettered ones)",
		Long: `Resume first captures into the DLQ any item whose River job ended without its
DLQ write, then re-enqueues the job's unfinished items: pending items with no
River job left to run them (deleted, or lost). Items still queued, running or
waiting for a retry are left alone. With --include-dlq-items the job's
dead-lettered items (status dead_lettered, eligible or not) are put back in
the work queue too; their history goes on from where it stopped.

Items an interrupted 'run --wait' left queued go on with resume --wait (this
process works them) or, without --wait, are handed to 'relay worker'.

The job's agents are given the variables it records (agent_env, shown by
'relay mapreduce status'); relay keeps their names, never their values, so
resume --wait refuses to start unless each is given again (--agent-env NAME
or NAME=VALUE, or agent_env). --agent-env may add names: the job records
them and its agents get them from then on. Without --wait, 'relay worker'
must give them all (its agent_env).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			pool, err := a.open(ctx, "mapreduce")
			if err != nil {
				return err
			}
			defer pool.Close()
			job, err := loadJob(ctx, pool, args[0])
			if err != nil {
				return err
			}
			agents, err := agentsFor(cmd, a, job, wait)
			if err != nil {
				return err
			}
			if err := mapreduce.Sweep(ctx, pool, a.logger); err != nil {
				a.logger.WarnContext(ctx, "could not capture discarded items first", "error", err.Error())
			}
			client, err := worker.NewInsertClient(pool, worker.ConfigFrom(a.cfg), a.logger)
			if err != nil {
				return err
			}
			retries := intOrDefault(maxRetries, -1, job.MaxRetries)
			store, dlq := mapreduce.NewStore(pool), items.NewStore(pool, a.logger)
			// With --wait this process works the job on its own queue;
			// without, 'relay worker' does, on the shared one: the items an
			// interrupted --wait run left queued move there.
			job.Queue = mapreduce.Queue
			if wait {
				job.Queue = mapreduce.WaitQueue(job.ID)
			}
			var unfinished, fromDLQ []string
			var moved int
			err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				var err error
				if unfinished, err = store.UnfinishedTx(ctx, tx, job.ID); err != nil {
					return err
				}
				if moved, err = store.MoveQueuedTx(ctx, tx, job.ID, job.Queue); err != nil {
					return err
				}
				if includeDLQ {
					if fromDLQ, err = dlq.ClaimAllTx(ctx, tx, job.ID); err != nil {
						return err
					}
				}
				return store.RequeueTx(ctx, tx, client, job, append(append([]string{}, unfinished...), fromDLQ...), retries)
			})
			if err != nil {
				return err
			}
			if len(fromDLQ) > 0 {
				_ = dlq.RecordEvent(ctx, deadletter.DefaultActor(), items.EventItemsReprocessed, len(fromDLQ),
					map[string]any{"job_id": job.ID, "count": len(fromDLQ), "successful": nil, "source": "mapreduce resume"})
			}
			c, err := store.Counts(ctx, job.ID)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.env.Stderr, "relay mapreduce: job %s: re-enqueued %d unfinished and %d dead-lettered items; "+
				"%d items already queued or running left alone\n", job.ID, len(unfinished), len(fromDLQ),
				c.Live()-len(unfinished)-len(fromDLQ))
			if moved > 0 && !wait {
				fmt.Fprintf(a.env.Stderr, "relay mapreduce: job %s: %d items an interrupted --wait run left queued "+
					"are handed to 'relay worker'\n", job.ID, moved)
			}
			if !wait {
				return nil
			}
			return waitAndSummarize(ctx, a, pool, job, agents, intOrDefault(parallel, 0, a.cfg.MapReduceParallel), asJSON)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&includeDLQ, "include-dlq-items", false, "put the job's dead-lettered items back in the work queue too")
	f.BoolVar(&wait, "wait", false, "work the items in this process and print the job summary")
	f.IntVar(&parallel, "parallel", 0, "agents run at once with --wait (default --mapreduce-parallel)")
	f.IntVar(&maxRetries, "max-retries", -1, "retries per re-run item (default: the job's)")
	f.BoolVar(&asJSON, "json", false, "with --wait, print the summary as JSON")
	return cmd
}

// agentsFor prepares a command that puts job's items back in the queue
// (resume, dlq retry). With wait, this process runs the agents: it must be
// able to (agentsHere), give every variable the job records, and may add
// some (requireAgentEnv). Without, it records agent_env's names on the job
// for 'relay worker' to give (agentEnvNames), and runs nothing. Either way
// job.AgentEnv becomes the names the job records once its items are
// requeued (mapreduce.Store.RequeueTx).
func agentsFor(cmd *cobra.Command, a *app, job *mapreduce.Job, wait bool) (*agentSetup, error) {
	if !wait {
		names, err := agentEnvNames(cmd, a)
		if err != nil {
			return nil, err
		}
		job.AgentEnv = agent.EnvNames(append(job.AgentEnv, names...))
		return nil, nil
	}
	agents, err := agentsHere(a)
	if err != nil {
		return nil, err
	}
	argv, err := agent.Split(job.Agent)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", job.ID, err)
	}
	if err := agent.CheckProgram(argv[0], agents.user); err != nil {
		return nil, usageError{fmt.Errorf("job %s: %w", job.ID, err)}
	}
	return agents, requireAgentEnv(job, agents)
}

// joinItemIDs renders ids for messages, eliding after n.
func joinItemIDs(ids []string, n int) string {
	if len(ids) <= n {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:n], ", ") + fmt.Sprintf(", … (%d more)", len(ids)-n)
}

package mapreduce

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/relay-dev/relay/internal/agent"
)

// Job is one row of mapreduce_jobs: what every item of the job runs with.
type Job struct {
	ID           string        `json:"job_id"`
	Agent        string        `json:"agent"`
	InputPath    string        `json:"input_path"`
	ItemCount    int           `json:"item_count"`
	MaxRetries   int           `json:"max_retries"`
	Parallel     int           `json:"parallel"`
	Timeout      time.Duration `json:"timeout"`
	RetryBackoff time.Duration `json:"retry_backoff"`
	DLQMaxItems  int           `json:"dlq_max_items"`
	Policy       Policy        `json:"dlq_policy"`
	// AgentEnv names the variables (agent_env) the job's agents are given,
	// sorted; never their values, which relay does not store. A process
	// that runs the job's agents must give every one of them: `relay
	// mapreduce resume --wait` and `relay dlq retry --wait` refuse to start
	// without them, and a worker without one fails the attempt (step
	// prepare_agent). Resume and retry may add names.
	AgentEnv  []string  `json:"agent_env"`
	CreatedAt time.Time `json:"created_at"`
	// Queue is the River queue CreateTx and RequeueTx put items on: Queue
	// (empty) for 'relay worker', WaitQueue(ID) for a --wait run. It is not
	// stored: it says where this process enqueues, not what the job is.
	Queue string `json:"-"`
}

var jobIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ErrJobNotFound is returned for a job id mapreduce_jobs does not hold.
var ErrJobNotFound = errors.New("MapReduce job not found")

// ErrJobExists is returned when creating a job whose id is taken.
var ErrJobExists = errors.New("MapReduce job already exists")

// Validate names the first field out of range.
func (j *Job) Validate() error {
	if !jobIDRE.MatchString(j.ID) {
		return fmt.Errorf("job id %q must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit", j.ID)
	}
	if _, err := agent.Split(j.Agent); err != nil {
		return err
	}
	if j.MaxRetries < 0 || j.MaxRetries > 100 {
		return fmt.Errorf("max retries %d must be between 0 and 100", j.MaxRetries)
	}
	if j.Parallel < 1 || j.Parallel > 1000 {
		return fmt.Errorf("parallel %d must be between 1 and 1000", j.Parallel)
	}
	if j.Timeout < time.Millisecond {
		return fmt.Errorf("timeout %s must be at least 1ms", j.Timeout)
	}
	if j.RetryBackoff < 0 {
		return fmt.Errorf("retry backoff %s must not be negative", j.RetryBackoff)
	}
	if j.DLQMaxItems < 1 {
		return fmt.Errorf("dlq max items %d must be at least 1", j.DLQMaxItems)
	}
	for _, n := range j.AgentEnv {
		if err := agent.CheckEnvName(n); err != nil {
			return fmt.Errorf("agent_env: %w", err)
		}
	}
	return j.Policy.Validate()
}

// MarshalJSON writes the durations as Go duration strings ("10m0s"), and
// agent_env as a list, empty rather than null.
func (j *Job) MarshalJSON() ([]byte, error) {
	type plain Job
	return json.Marshal(struct {
		*plain
		Timeout      string   `json:"timeout"`
		RetryBackoff string   `json:"retry_backoff"`
		AgentEnv     []string `json:"agent_env"`
	}{(*plain)(j), j.Timeout.String(), j.RetryBackoff.String(), append([]string{}, j.AgentEnv...)})
}

// NewJobID returns a job id from the time and random bytes, like
// mr-20260121-142530-3fa2.
func NewJobID(now time.Time, random [2]byte) string {
	return fmt.Sprintf("mr-%s-%02x%02x", now.UTC().Format("20060102-150405"), random[0], random[1])
}

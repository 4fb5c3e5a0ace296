package cli

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/deadletter"
)

const timeFlagHelp = `--since and --until take an RFC 3339 time (2026-11-21T04:00:00Z), a date
(2026-11-21, UTC midnight) or an age counted back from now: a Go duration
(90m, 24h) or a number of days or weeks (7d, 2w). They bound failed_at, the
time of a row's latest failure: since <= failed_at < until.`

// filterFlags are the flags that select failed_pois rows.
type filterFlags struct {
	status, fileID, signature, errorClass, since, until string
	manualReview                                        bool
}

func (f *filterFlags) register(cmd *cobra.Command, statusHelp string) {
	fl := cmd.Flags()
	fl.StringVar(&f.status, "status", "", statusHelp)
	fl.StringVar(&f.fileID, "file-id", "", "only rows of this file")
	fl.StringVar(&f.signature, "signature", "", "only rows with this error signature (a raw error message works too: it is normalized the same way)")
	fl.StringVar(&f.errorClass, "error-class", "", "only rows of this class: validation, panic, timeout, resolver or storage")
	fl.StringVar(&f.since, "since", "", "only rows that last failed at or after this time or age (see Long help)")
	fl.StringVar(&f.until, "until", "", "only rows that last failed before this time or age")
	fl.BoolVar(&f.manualReview, "manual-review", false, "only rows needing manual review")
}

// filter validates the flags into a deadletter.Filter (usage errors).
func (f *filterFlags) filter(now time.Time) (deadletter.Filter, error) {
	var out deadletter.Filter
	if f.status != "" {
		st, err := deadletter.ParseStatus(f.status)
		if err != nil {
			return out, usageError{fmt.Errorf("--status: %w", err)}
		}
		out.Status = st
	}
	if f.errorClass != "" {
		c, err := deadletter.ParseErrorClass(f.errorClass)
		if err != nil {
			return out, usageError{fmt.Errorf("--error-class: %w", err)}
		}
		out.ErrorClass = c
	}
	var err error
	if out.Since, err = parseTimeFlag(f.since, now); err != nil {
		return out, usageError{fmt.Errorf("--since: %w", err)}
	}
	if out.Until, err = parseTimeFlag(f.until, now); err != nil {
		return out, usageError{fmt.Errorf("--until: %w", err)}
	}
	out.FileID, out.Signature, out.ManualReview = f.fileID, f.signature, f.manualReview
	if err := out.Validate(); err != nil {
		return out, usageError{err}
	}
	return out, nil
}

// parseTimeFlag reads an RFC 3339 time, a date, or an age before now ("24h",
// "7d", "2w"); "" is the zero time.
func parseTimeFlag(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t.UTC(), nil
	}
	var age time.Duration
	if n, unit := strings.TrimRight(s, "dw"), s[len(s)-1]; (unit == 'd' || unit == 'w') && len(n) == len(s)-1 {
		v, err := strconv.ParseFloat(n, 64)
		if err != nil || v < 0 {
			return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time, a date (2006-01-02) or an age (24h, 7d, 2w)", s)
		}
		day := 24 * time.Hour
		if unit == 'w' {
			day *= 7
		}
		age = time.Duration(v * float64(day))
	} else {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time, a date (2006-01-02) or an age (24h, 7d, 2w)", s)
		}
		age = d
	}
	return now.Add(-age).UTC(), nil
}

// actorFlag registers --actor, the name audit events record.
func actorFlag(cmd *cobra.Command, actor *string) {
	cmd.Flags().StringVar(actor, "actor", "", "who to record in the audit trail (dead_letter_events); default: the OS user")
}

func actorOr(actor string) string {
	if strings.TrimSpace(actor) != "" {
		return actor
	}
	return deadletter.DefaultActor()
}

// confirm asks question on w and reads a yes from r.
func confirm(r io.Reader, w io.Writer, question string) bool {
	fmt.Fprintf(w, "%s [y/N] ", question)
	line, _ := bufio.NewReader(r).ReadString('\n')
	ans := strings.ToLower(strings.TrimSpace(line))
	return ans == "y" || ans == "yes"
}

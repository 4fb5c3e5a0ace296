package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/relay-dev/relay/deadletter/failed"
)

// timeFlagHelp documents --since and --until of the failed_pois commands.
var timeFlagHelp = timeRangeHelp("failed_at, the time of a row's latest failure")

// filterFlags are the flags that select failed_pois rows.
type filterFlags struct {
	repository                            repositoryFlag
	status, fileID, signature, errorClass string
	poiID, search                         string
	manualReview                          bool
	times                                 timeRange
}

func (f *filterFlags) register(cmd *cobra.Command, statusHelp string) {
	fl := cmd.Flags()
	fl.StringVar(&f.status, "status", "", statusHelp)
	f.repository.register(cmd)
	fl.StringVar(&f.fileID, "file-id", "", "only rows of this file")
	fl.StringVar(&f.signature, "signature", "", "only rows with this error signature (a raw error message works too: it is normalized the same way)")
	fl.StringVar(&f.errorClass, "error-class", "", "only rows of this class: validation, panic, timeout, resolver or storage")
	fl.StringVar(&f.poiID, "poi-id", "", "only rows of this POI id")
	fl.StringVar(&f.search, "search", "", "only rows whose error message contains this text (ignoring case; % and _ are literal)")
	f.times.register(cmd)
	fl.BoolVar(&f.manualReview, "manual-review", false, "only rows needing manual review")
}

// filter validates the flags into a failed.Filter (usage errors).
func (f *filterFlags) filter(now time.Time) (failed.Filter, error) {
	var out failed.Filter
	if f.status != "" {
		st, err := failed.ParseStatus(f.status)
		if err != nil {
			return out, usageError{fmt.Errorf("--status: %w", err)}
		}
		out.Status = st
	}
	if f.errorClass != "" {
		c, err := failed.ParseErrorClass(f.errorClass)
		if err != nil {
			return out, usageError{fmt.Errorf("--error-class: %w", err)}
		}
		out.ErrorClass = c
	}
	var err error
	if out.Since, out.Until, err = f.times.parse(now); err != nil {
		return out, err
	}
	out.Repository = f.repository.value()
	out.FileID, out.Signature, out.ManualReview = f.fileID, f.signature, f.manualReview
	out.POIID, out.Search = f.poiID, f.search
	if err := out.Validate(); err != nil {
		return out, usageError{err}
	}
	return out, nil
}

// repositoryFlag is --repository: set, even to "" (the default
// repository), it selects one repository.
type repositoryFlag struct {
	name string
	set  bool
}

func (r *repositoryFlag) register(cmd *cobra.Command) {
	cmd.Flags().Var(r, "repository", `only this repository's rows ("" selects the default repository)`)
}

// value is the selected repository, nil when the flag was not given.
func (r *repositoryFlag) value() *string {
	if !r.set {
		return nil
	}
	name := r.name
	return &name
}

func (r *repositoryFlag) String() string { return r.name }
func (r *repositoryFlag) Set(s string) error {
	r.name, r.set = s, true
	return nil
}
func (r *repositoryFlag) Type() string { return "name" }

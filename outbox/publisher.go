// Package outbox publishes analysed files into relay inside the caller's own
// PostgreSQL transaction: it stores the file's POIs in the pois symbol table
// and enqueues exactly one River resolve_file job carrying the whole POI
// batch, in that same transaction. River's transactional insert is the
// outbox: if the caller rolls back, neither the POIs nor the job exist.
package outbox

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/relay-dev/relay/resolver"
)

// Defaults for Config.
const (
	MaxJobBytesDefault = 4 << 20
	MaxPOIBytesDefault = 16 << 20
	MaxAttemptsDefault = 10
)

// JobInserter inserts River jobs in a transaction; *river.Client[pgx.Tx]
// is one (an insert-only client needs no workers).
type JobInserter interface {
	InsertManyTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
}

// Config tunes the publisher. Zero values take the defaults.
type Config struct {
	// MaxJobBytes is the POI JSON size per job above which a file's POIs are
	// split across several jobs (each POI stays whole).
	MaxJobBytes int
	// MaxPOIBytes is the largest single POI accepted.
	MaxPOIBytes int
	// MaxAttempts is River's attempt limit for the jobs inserted.
	MaxAttempts int
}

// Publisher stores analyses and enqueues their resolve_file jobs.
type Publisher struct {
	jobs   JobInserter
	cfg    Config
	logger *slog.Logger
}

// New returns a Publisher that inserts jobs through jobs.
func New(jobs JobInserter, cfg *Config, logger *slog.Logger) *Publisher {
	c := Config{}
	if cfg != nil {
		c = *cfg
	}
	c.MaxJobBytes = cmp.Or(c.MaxJobBytes, MaxJobBytesDefault)
	c.MaxPOIBytes = cmp.Or(c.MaxPOIBytes, MaxPOIBytesDefault)
	c.MaxAttempts = cmp.Or(c.MaxAttempts, MaxAttemptsDefault)
	return &Publisher{jobs: jobs, cfg: c, logger: logger}
}

// Result says what one publish stored and enqueued.
type Result struct {
	FileID string
	// Version is the file's version after this publish (1 the first time).
	Version int64
	// POIs is the number of POIs received; Symbols how many of them passed
	// structural validation and entered the symbol table (the rest are
	// dead-lettered by the worker).
	POIs    int
	Symbols int
	// JobIDs are the River jobs enqueued: one, unless the file was larger
	// than MaxJobBytes, or none for an empty analysis of a new file.
	JobIDs []int64
}

// ErrIsolation is returned by PublishTx and PublishManyTx in a transaction
// that is not READ COMMITTED (PostgreSQL's default): a publish must see
// every publish of its files that committed while it waited for their
// publish locks, which a REPEATABLE READ or SERIALIZABLE snapshot taken
// before the wait does not.
var ErrIsolation = errors.New("a publish needs a READ COMMITTED transaction")

// PublishTx publishes a in the caller's transaction tx, which must be READ
// COMMITTED (ErrIsolation). A rejected analysis
// returns an error wrapping ErrRejected (a *RejectError naming the file and
// POI) and writes nothing; the caller may still commit its own work.
// Re-publishing a file replaces its POIs and the relationships that
// originate from them; publishing the same analysis twice duplicates nothing.
func (p *Publisher) PublishTx(ctx context.Context, tx pgx.Tx, a Analysis) (*Result, error) {
	res, err := p.PublishManyTx(ctx, tx, []Analysis{a})
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// PublishManyTx publishes several files in the caller's transaction tx with
// the same few statements PublishTx uses for one, whatever their number:
// each file still gets its own resolve_file job (exactly one, unless it is
// larger than MaxJobBytes), and results[i] is as[i]'s. It is all or
// nothing: if any analysis is rejected it returns that file's error
// (wrapping ErrRejected) and publishes none of them, leaving tx usable, so
// a caller that wants the others published publishes them one by one with
// PublishTx. A file may appear only once per call.
func (p *Publisher) PublishManyTx(ctx context.Context, tx pgx.Tx, as []Analysis) ([]*Result, error) {
	files := make([]fileBatch, len(as))
	type key struct{ repo, id string }
	seen := make(map[key]int, len(as))
	owner := map[key]int{} // (repository, POI id) -> index of the file publishing it
	for i, a := range as {
		syms, err := p.check(a)
		if err != nil {
			var rej *RejectError
			if errors.As(err, &rej) {
				rej.Repository = a.Repository
			}
			return nil, err
		}
		if prev, dup := seen[key{a.Repository, a.FileID}]; dup {
			rej := reject(a.FileID, "appears twice in one publish (analyses #%d and #%d); publish one analysis per file", prev, i)
			rej.Repository = a.Repository
			return nil, rej
		}
		seen[key{a.Repository, a.FileID}] = i
		for _, s := range syms {
			if j, dup := owner[key{a.Repository, s.ID}]; dup {
				return nil, &RejectError{Repository: a.Repository, FileID: a.FileID, POIID: s.ID, POIIndex: -1,
					Reason: fmt.Sprintf("id also belongs to a POI of file %q published with it; POI ids must be unique within a repository", as[j].FileID)}
			}
			owner[key{a.Repository, s.ID}] = i
		}
		files[i] = fileBatch{a: a, syms: syms}
	}
	if len(files) == 0 {
		return nil, nil
	}

	// Everything below runs under a savepoint so that a rejection found in
	// the database (a POI id owned by another file) leaves the caller's
	// transaction usable and these files untouched.
	sp, err := tx.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("error publishing %s: %w", describe(files), err)
	}
	defer func() { _ = sp.Rollback(ctx) }()
	st := store{tx: sp}

	xid, rej, err := st.write(ctx, files)
	if err != nil {
		return nil, fmt.Errorf("error publishing %s: %w", describe(files), err)
	}
	if rej != nil {
		return nil, rej
	}

	results := make([]*Result, len(files))
	var params []river.InsertManyParams
	var owners []int // the file of each job
	for i, f := range files {
		results[i] = &Result{FileID: f.a.FileID, Version: f.version, POIs: len(f.a.POIs), Symbols: len(f.syms)}
		if len(f.a.POIs) == 0 && (!f.existed || f.prevCount == 0) {
			// Nothing to resolve and nothing that referred to this file
			// changed.
			continue
		}
		for _, jp := range p.jobParams(f.a, f.version, xid, f.changed) {
			params = append(params, jp)
			owners = append(owners, i)
		}
	}
	if len(params) > 0 {
		inserted, err := p.jobs.InsertManyTx(ctx, sp, params)
		if err != nil {
			return nil, fmt.Errorf("error enqueuing resolve_file jobs for %s: %w", describe(files), err)
		}
		for k, r := range inserted {
			results[owners[k]].JobIDs = append(results[owners[k]].JobIDs, r.Job.ID)
		}
	}
	if err := sp.Commit(ctx); err != nil {
		return nil, fmt.Errorf("error publishing %s: %w", describe(files), err)
	}
	for _, r := range results {
		p.logger.DebugContext(ctx, "file published", slog.String("file_id", r.FileID), slog.Int64("file_version", r.Version),
			slog.Int("pois", r.POIs), slog.Int("symbols", r.Symbols), slog.Any("job_ids", r.JobIDs))
	}
	return results, nil
}

// fileBatch is one file of a publish: its analysis and symbols, then what
// the store found and decided for it.
type fileBatch struct {
	a    Analysis
	syms []resolver.POI

	existed   bool
	prevCount int
	version   int64
	changed   []string
}

// describe names the files of a publish for errors: the file, or the first
// one and how many.
func describe(files []fileBatch) string {
	if len(files) == 1 {
		return fmt.Sprintf("file %q", files[0].a.FileID)
	}
	return fmt.Sprintf("%d files (first %q)", len(files), files[0].a.FileID)
}

// check validates what publish itself is responsible for and returns the
// POIs that enter the symbol table. Structural problems of single POIs are
// not publish errors: those POIs travel in the job and are dead-lettered.
func (p *Publisher) check(a Analysis) ([]resolver.POI, error) {
	if strings.TrimSpace(a.FileID) == "" {
		return nil, reject(a.FileID, "fileId is empty")
	}
	if !utf8.ValidString(a.FileID) || strings.ContainsRune(a.FileID, 0) {
		return nil, reject(a.FileID, "fileId holds a NUL character or invalid UTF-8, which PostgreSQL cannot store")
	}
	if len(a.FileID) > resolver.MaxNameBytes {
		return nil, reject(truncateString(a.FileID), "fileId is %d bytes, more than the %d-byte limit for ids and names", len(a.FileID), resolver.MaxNameBytes)
	}
	if !utf8.ValidString(a.Repository) || strings.ContainsRune(a.Repository, 0) {
		return nil, reject(a.FileID, "repository holds a NUL character or invalid UTF-8, which PostgreSQL cannot store")
	}
	if len(a.Repository) > resolver.MaxNameBytes {
		return nil, reject(a.FileID, "repository is %d bytes, more than the %d-byte limit for ids and names", len(a.Repository), resolver.MaxNameBytes)
	}
	seen := make(map[string]int, len(a.POIs))
	syms := make([]resolver.POI, 0, len(a.POIs))
	for i, raw := range a.POIs {
		sym := resolver.DecodeSymbol(raw) // what the symbol table needs, in one pass
		id, idOK, filePath, filePathOK := sym.ID, sym.IDOK, sym.FilePath, sym.FilePathOK
		bad := func(reason string, args ...any) error {
			e := &RejectError{FileID: a.FileID, POIIndex: i, Reason: fmt.Sprintf(reason, args...)}
			if idOK {
				e.POIID = id
			}
			return e
		}
		switch {
		case len(raw) > p.cfg.MaxPOIBytes:
			return nil, bad("is %d bytes, more than the %d-byte limit per POI (max_poi_bytes)", len(raw), p.cfg.MaxPOIBytes)
		case !utf8.Valid(raw):
			return nil, bad("holds invalid UTF-8, which PostgreSQL cannot store; send valid UTF-8 (e.g. escape binary content)")
		case containsNUL(raw):
			return nil, bad(`holds a NUL character (\u0000), which PostgreSQL cannot store in text or jsonb; remove or escape it`)
		case containsLoneSurrogate(raw):
			return nil, bad(`holds an unpaired UTF-16 surrogate escape (\ud800-\udfff), which PostgreSQL cannot store in jsonb`)
		case idOK && len(id) > resolver.MaxNameBytes:
			n := len(id)
			id = truncateString(id) // for the error message
			return nil, bad("id is %d bytes, more than the %d-byte limit for ids and names", n, resolver.MaxNameBytes)
		case filePathOK && filePath != "" && filePath != a.FileID:
			return nil, bad("filePath %q does not match the analysis fileId %q", filePath, a.FileID)
		}
		if idOK && id != "" {
			if prev, dup := seen[id]; dup {
				return nil, bad("duplicate POI id (also POI #%d of this file)", prev)
			}
			seen[id] = i
		}
		if sym.NameOK && len(sym.Name) > resolver.MaxNameBytes {
			return nil, bad("name is %d bytes, more than the %d-byte limit for ids and names", len(sym.Name), resolver.MaxNameBytes)
		}
		if sym.Err == nil {
			syms = append(syms, sym.POI)
		}
	}
	return syms, nil
}

// jobParams builds the file's jobs: one per part of Split; almost always
// exactly one.
func (p *Publisher) jobParams(a Analysis, version, xid int64, changed []string) []river.InsertManyParams {
	ends := Split(a.POIs, p.cfg.MaxJobBytes)
	opts := &river.InsertOpts{MaxAttempts: p.cfg.MaxAttempts}
	params := make([]river.InsertManyParams, 0, len(ends))
	start := 0
	for i, end := range ends {
		args := ResolveFileArgs{Repository: a.Repository, FileID: a.FileID, FileVersion: version, POIs: a.POIs[start:end:end]}
		if args.POIs == nil {
			args.POIs = []json.RawMessage{}
		}
		if len(ends) > 1 {
			args.Part, args.Parts = i+1, len(ends)
		}
		if i == 0 {
			args.ChangedNames, args.PublishXID = changed, xid
		}
		params = append(params, river.InsertManyParams{Args: args, InsertOpts: opts})
		start = end
	}
	return params
}

// truncateString cuts s to 64 bytes on a rune boundary for error messages.
func truncateString(s string) string {
	if len(s) <= 64 {
		return s
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

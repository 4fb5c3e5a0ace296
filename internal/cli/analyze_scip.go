package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/relay-dev/relay/internal/goanalyze"
	"github.com/relay-dev/relay/internal/scipindex"
	"github.com/relay-dev/relay/outbox"
)

// ReferencesSCIP is AnalyzeSummary.References and ReferencesUsed with --scip.
const ReferencesSCIP = "scip"

// SCIPSummary is what `relay analyze --scip --json` adds: the index's
// documents and occurrences, and the call sites left to the lexical rule.
type SCIPSummary struct {
	Index       string  `json:"index"`
	Documents   int     `json:"documents"`
	Occurrences int     `json:"occurrences"`
	Fallbacks   int     `json:"fallbacks"`
	CheckSecs   float64 `json:"check_seconds"`
}

// publishSCIP publishes the SCIP index at indexPath of the project rooted
// at dir: it reads the whole index once to check it (with progress every
// second on stderr), publishing nothing when any document is malformed or
// when it holds none, then again to
// publish each document, cfg.FilesPerTx per transaction.
func publishSCIP(ctx context.Context, db goanalyze.Beginner, pub *outbox.Publisher, indexPath, dir string,
	cfg goanalyze.PublishConfig, stderr io.Writer) (*goanalyze.Summary, *SCIPSummary, error) {
	f, err := os.Open(indexPath)
	if err != nil {
		return nil, nil, usageError{fmt.Errorf("error opening the scip index: %w", err)}
	}
	defer f.Close()
	icfg := scipindex.Config{Source: os.DirFS(dir)}
	start, last, docs := time.Now(), time.Now(), 0
	err = scipindex.Read(ctx, f, icfg, func(scipindex.File) error {
		docs++
		if time.Since(last) >= time.Second {
			fmt.Fprintf(stderr, "relay analyze: checking %s: %s read\n", indexPath, pluralize(docs, "document"))
			last = time.Now()
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("error reading %s (nothing was published): %w", indexPath, err)
	}
	if docs == 0 {
		return nil, nil, fmt.Errorf("index %s holds no documents (nothing was published)", indexPath)
	}
	ss := &SCIPSummary{Index: indexPath, CheckSecs: time.Since(start).Seconds()}
	fmt.Fprintf(stderr, "relay analyze: %s checked: %s in %.1fs\n", indexPath, pluralize(docs, "document"), ss.CheckSecs)
	b := goanalyze.NewBatch(ctx, db, pub, cfg)
	err = scipindex.Read(ctx, f, icfg, func(file scipindex.File) error {
		ss.Documents++
		ss.Occurrences += file.Occurrences
		ss.Fallbacks += file.Fallbacks
		return b.Add(file.Analysis)
	})
	if err == nil {
		err = b.Flush()
	}
	sum := b.Summary()
	sum.ReferencesUsed = ReferencesSCIP
	if err != nil {
		return sum, ss, fmt.Errorf("error publishing %s: %w", indexPath, err)
	}
	return sum, ss, nil
}

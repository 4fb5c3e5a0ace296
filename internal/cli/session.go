package cli

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relay-dev/relay/internal/database"
)

// openSession opens a pool whose connections keep their session, for the
// commands that need one (migrate: goose's advisory lock is held across
// River's and relay's migration transactions; demo's database creation):
// database_direct_url, or database_url when relay is not behind a
// transaction pooler. Session settings are sent at connect as usual.
func (a *app) openSession(ctx context.Context, role string) (*pgxpool.Pool, error) {
	if a.cfg.TransactionPooler() && a.cfg.DatabaseDirectURL == "" {
		return nil, usageError{fmt.Errorf("relay %s needs a session of its own (a migration lock held across transactions), "+
			"which a transaction pooler does not give: database_pooler is transaction, so set database_direct_url "+
			"(RELAY_DATABASE_DIRECT_URL) to PostgreSQL itself, not the pooler", role)}
	}
	opts := database.OptionsFromConfig(a.cfg, role)
	opts.TransactionPooler = false
	opts.Logger = a.logger
	return database.Open(ctx, a.cfg.SessionURL(), opts)
}

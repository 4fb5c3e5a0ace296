package deadletter

import (
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// Event is one audit event in dead_letter_events, of either dead-letter
// table.
type Event struct {
	ID         int64           `json:"id"`
	OccurredAt time.Time       `json:"occurred_at"`
	Actor      string          `json:"actor"`
	Action     string          `json:"action"`
	ItemCount  int64           `json:"item_count"`
	Details    json.RawMessage `json:"details"`
}

// CollectEvents reads the dead_letter_events rows of a query that selects
// id, occurred_at, actor, action, item_count and details::text (err is the
// query's), and returns them (none: an empty slice), their times in UTC.
func CollectEvents(rows pgx.Rows, err error) ([]Event, error) {
	if err != nil {
		return nil, err
	}
	return pgx.AppendRows(make([]Event, 0), rows, func(row pgx.CollectableRow) (Event, error) {
		var e Event
		var details string
		err := row.Scan(&e.ID, &e.OccurredAt, &e.Actor, &e.Action, &e.ItemCount, &details)
		e.OccurredAt, e.Details = e.OccurredAt.UTC(), json.RawMessage(details)
		return e, err
	})
}

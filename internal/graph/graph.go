// Package graph reads relay's resolved relationships as a reader asks for
// them: the POIs a target names (by id, symbol, file:name or name), its
// call hierarchy (relay_callers and relay_callees, migration 28) as a tree,
// and the files a change to a file affects (relay_dependents). `relay graph`
// prints what it returns; docs/relationships.md is the contract of the
// tables and functions it reads.
package graph

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/relay-dev/relay/resolver"
)

// Querier runs queries: a *pgxpool.Pool or a pgx.Tx.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Item is one POI, with its location.
type Item struct {
	Repository string `json:"repository"`
	POIID      string `json:"poi_id"`
	Name       string `json:"name"`
	// Type is the POI's type (function_definition, method_definition,
	// class_declaration, interface_declaration, import, ...).
	Type   string `json:"type"`
	FileID string `json:"file_id"`
	Line   int    `json:"line"`
	// Symbol is the analyzer's fully qualified name, "" when it sent none.
	Symbol string `json:"symbol"`
}

// Label is how a person reads an item: its symbol, or its name.
func (it Item) Label() string {
	if it.Symbol != "" {
		return it.Symbol
	}
	return it.Name
}

// Location is "file:line".
func (it Item) Location() string { return fmt.Sprintf("%s:%d", it.FileID, it.Line) }

// Node is an item of a walk, with the items one level further.
type Node struct {
	Item
	// Depth is the node's level: 1 for the target's direct callers or
	// callees.
	Depth int `json:"depth"`
	// Repeated is set when the item was listed earlier in the walk (nearer
	// the target, or earlier at the same depth): it is not expanded again
	// and has no children.
	Repeated bool `json:"repeated"`
	// Cycle is set when the item is the target or one of the items on the
	// path from the target to this node's parent.
	Cycle    bool    `json:"cycle"`
	Children []*Node `json:"children"`
}

// Direction says which way a walk follows the relationships.
type Direction string

const (
	// Callers follows relationships into the item: who calls (extends,
	// implements, imports) it.
	Callers Direction = "callers"
	// Callees follows relationships out of the item.
	Callees Direction = "callees"
)

// RelTypes are the relationship types a walk follows, one at a time.
var RelTypes = []string{string(resolver.Calls), string(resolver.Extends), string(resolver.Implements), string(resolver.Imports)}

// Walk returns the items related to root in direction, rel_type
// relationships only, to depth levels, as a tree whose first level are
// root's direct callers or callees. Each item is expanded once (see Node).
func Walk(ctx context.Context, q Querier, root Item, dir Direction, relType string, depth int) ([]*Node, error) {
	fn := "relay_callers"
	if dir == Callees {
		fn = "relay_callees"
	}
	rows, err := q.Query(ctx, `SELECT level, repository, poi_id, coalesce(name, ''), coalesce(type, ''), coalesce(file_id, ''),
		coalesce(line_number, 0), coalesce(symbol, ''), via_repository, via_poi_id, repeated, cycle
		FROM `+fn+`($1, depth => $2, repo => $3, rel_type => $4)`, root.POIID, depth, root.Repository, relType)
	if err != nil {
		return nil, fmt.Errorf("error reading the %s of %q: %w", dir, root.POIID, err)
	}
	defer rows.Close()
	type key struct{ repo, poi string }
	rootNode := &Node{Item: root, Children: []*Node{}}
	expanded := map[key]*Node{{root.Repository, root.POIID}: rootNode}
	for rows.Next() {
		n := &Node{Children: []*Node{}}
		var via key
		if err := rows.Scan(&n.Depth, &n.Repository, &n.POIID, &n.Name, &n.Type, &n.FileID, &n.Line, &n.Symbol,
			&via.repo, &via.poi, &n.Repeated, &n.Cycle); err != nil {
			return nil, fmt.Errorf("error reading the %s of %q: %w", dir, root.POIID, err)
		}
		// Rows come level by level, and an item's via is an item expanded
		// at the level before.
		parent, ok := expanded[via]
		if !ok {
			return nil, fmt.Errorf("error reading the %s of %q: %q reached through %q, not listed before it", dir, root.POIID, n.POIID, via.poi)
		}
		parent.Children = append(parent.Children, n)
		if !n.Repeated {
			expanded[key{n.Repository, n.POIID}] = n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error reading the %s of %q: %w", dir, root.POIID, err)
	}
	return rootNode.Children, nil
}

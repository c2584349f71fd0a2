// Package costs is the cost totals read model: tokens and estimated cost
// per session, day, model and provider, from which totals by source and
// by lineage are derived with the lineage model.
package costs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"

	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/schema"
)

// Row is one total.
type Row struct {
	Key   string       `json:"key"`
	Calls int64        `json:"calls"`
	Usage schema.Usage `json:"usage"`
	// Cost is the cost of the priced calls; Unpriced counts the others,
	// whose models (UnpricedModels) have no price: their cost is unknown,
	// not zero.
	Cost           float64  `json:"cost_usd"`
	Unpriced       int64    `json:"unpriced_calls"`
	UnpricedModels []string `json:"unpriced_models,omitempty"`
}

// Pricer prices calls of model that recorded no cost of their own, from
// their usage added up (actors/model's Prices.CallCost, with recorded 0);
// ok is false when the model has no price.
type Pricer func(model string, u schema.Usage, recorded float64) (cost float64, ok bool)

// pending is one cell's calls not yet written: all of them, and apart
// those that recorded no cost (priced when read, with today's prices).
type pending struct {
	Row
	unpriced      int64
	unpricedUsage schema.Usage
}

type cell struct {
	session, day, model, provider string
}

// Model is the costs read model.
type Model struct {
	pending map[cell]*pending
	sources map[string]string
}

// NewModel returns the costs model.
func NewModel() *Model { return &Model{pending: map[cell]*pending{}, sources: map[string]string{}} }

func (*Model) Name() string { return "costs" }
func (*Model) Version() int { return 3 }

// PayloadTypes implements projections.Selective.
func (*Model) PayloadTypes() []string {
	return []string{schema.TypeSessionStarted, schema.TypeAssistantMessageAdded, schema.TypeAuxiliaryCallCompleted}
}

func (*Model) Create(tx *projections.Tx) error {
	return tx.ExecSchema(`CREATE TABLE IF NOT EXISTS costs (
		session TEXT NOT NULL, day TEXT NOT NULL, model TEXT NOT NULL, provider TEXT NOT NULL,
		calls INTEGER NOT NULL, prompt INTEGER NOT NULL, completion INTEGER NOT NULL,
		cache_read INTEGER NOT NULL, cache_write INTEGER NOT NULL, cost REAL NOT NULL,
		unpriced INTEGER NOT NULL, u_prompt INTEGER NOT NULL, u_completion INTEGER NOT NULL,
		u_cache_read INTEGER NOT NULL, u_cache_write INTEGER NOT NULL,
		PRIMARY KEY (session, day, model, provider)) WITHOUT ROWID;
		CREATE INDEX IF NOT EXISTS costs_day ON costs (day);
		CREATE TABLE IF NOT EXISTS cost_sources (session TEXT PRIMARY KEY, source TEXT NOT NULL) WITHOUT ROWID`)
}

func (*Model) Drop(tx *projections.Tx) error {
	_, err := tx.Exec(`DROP TABLE IF EXISTS costs; DROP TABLE IF EXISTS cost_sources`)
	return err
}

func (m *Model) Forget() {
	clear(m.pending)
	clear(m.sources)
}

func (m *Model) Apply(tx *projections.Tx, ev projections.Event) error {
	if ev.IsTombstone() {
		if err := m.Flush(tx); err != nil {
			return err
		}
		if _, err := tx.Exec(`DELETE FROM costs WHERE session = ?`, ev.SessionID); err != nil {
			return err
		}
		_, err := tx.Exec(`DELETE FROM cost_sources WHERE session = ?`, ev.SessionID)
		return err
	}
	switch e := ev.Payload.(type) {
	case schema.SessionStarted:
		m.sources[ev.SessionID] = e.Source
	case schema.AssistantMessageAdded:
		m.add(cell{ev.SessionID, ev.Time.UTC().Format("2006-01-02"), e.Model, e.Provider}, e.Usage, e.CostUSD)
	case schema.AuxiliaryCallCompleted:
		m.add(cell{ev.SessionID, ev.Time.UTC().Format("2006-01-02"), e.Model, e.Provider}, e.Usage, e.CostUSD)
	}
	return nil
}

func (m *Model) add(k cell, u schema.Usage, cost float64) {
	r := m.pending[k]
	if r == nil {
		r = &pending{}
		m.pending[k] = r
	}
	r.Calls++
	r.Usage = r.Usage.Add(u)
	switch {
	case cost > 0:
		r.Cost += cost
	case u.Total() > 0:
		// no price when it was made: priced when read, if one was added
		r.unpriced++
		r.unpricedUsage = r.unpricedUsage.Add(u)
	}
}

func (m *Model) Flush(tx *projections.Tx) error {
	rows, err := tx.Inserter(`INSERT INTO costs (session, day, model, provider, calls, prompt, completion, cache_read, cache_write, cost,
			unpriced, u_prompt, u_completion, u_cache_read, u_cache_write)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (session, day, model, provider) DO UPDATE SET calls = costs.calls + excluded.calls, prompt = costs.prompt + excluded.prompt,
			completion = costs.completion + excluded.completion, cache_read = costs.cache_read + excluded.cache_read,
			cache_write = costs.cache_write + excluded.cache_write, cost = costs.cost + excluded.cost,
			unpriced = costs.unpriced + excluded.unpriced, u_prompt = costs.u_prompt + excluded.u_prompt,
			u_completion = costs.u_completion + excluded.u_completion, u_cache_read = costs.u_cache_read + excluded.u_cache_read,
			u_cache_write = costs.u_cache_write + excluded.u_cache_write`)
	if err != nil {
		return err
	}
	for k, r := range m.pending {
		u := r.unpricedUsage
		if err := rows.Add(k.session, k.day, k.model, k.provider, r.Calls, r.Usage.PromptTokens, r.Usage.CompletionTokens, r.Usage.CacheReadTokens, r.Usage.CacheWriteTokens, r.Cost,
			r.unpriced, u.PromptTokens, u.CompletionTokens, u.CacheReadTokens, u.CacheWriteTokens); err != nil {
			return err
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	clear(m.pending)
	if rows, err = tx.Inserter(upsertSource); err != nil {
		return err
	}
	for s, src := range m.sources {
		if err := rows.Add(s, src); err != nil {
			return err
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	clear(m.sources)
	return nil
}

var upsertSource = projections.Upsert("cost_sources", "session", "session, source")

// Dimensions totals can be grouped by.
var Dimensions = []string{"session", "lineage", "model", "provider", "source", "day"}

// Totals groups costs by dim, counting days on or after since (YYYY-MM-DD,
// "" for all). Grouping by lineage needs the lineage model's table. The
// calls that recorded no cost are priced with price (their token usage at
// today's prices); those it cannot price are counted as unpriced. Rows
// come most expensive first (by day: in order of days).
func Totals(ctx context.Context, db *projections.Reader, dim, since string, price Pricer) ([]Row, error) {
	key := map[string]string{"session": "c.session", "model": "c.model", "provider": "c.provider", "day": "c.day",
		"source": "coalesce(s.source, '')", "lineage": "coalesce(l.root, c.session)"}[dim]
	if key == "" {
		return nil, fmt.Errorf("--by %q: use session, lineage, model, provider, source or day", dim)
	}
	q := `SELECT ` + key + ` AS k, c.model, CAST(sum(calls) AS BIGINT), CAST(sum(prompt) AS BIGINT), CAST(sum(completion) AS BIGINT),
		CAST(sum(cache_read) AS BIGINT), CAST(sum(cache_write) AS BIGINT), sum(cost),
		CAST(sum(unpriced) AS BIGINT), CAST(sum(u_prompt) AS BIGINT), CAST(sum(u_completion) AS BIGINT),
		CAST(sum(u_cache_read) AS BIGINT), CAST(sum(u_cache_write) AS BIGINT)
		FROM costs c LEFT JOIN cost_sources s ON s.session = c.session`
	if dim == "lineage" {
		q += ` LEFT JOIN lineage l ON l.id = c.session`
	}
	q += ` WHERE c.day >= ? GROUP BY k, c.model ORDER BY k, c.model`
	rows, err := db.QueryContext(ctx, q, since)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Row
	at := map[string]int{}
	for rows.Next() {
		var r Row
		var model string
		var unpriced int64
		var u schema.Usage
		if err := rows.Scan(&r.Key, &model, &r.Calls, &r.Usage.PromptTokens, &r.Usage.CompletionTokens, &r.Usage.CacheReadTokens, &r.Usage.CacheWriteTokens, &r.Cost,
			&unpriced, &u.PromptTokens, &u.CompletionTokens, &u.CacheReadTokens, &u.CacheWriteTokens); err != nil {
			return nil, err
		}
		if unpriced > 0 {
			if cost, ok := price(model, u, 0); ok {
				r.Cost += cost
			} else {
				r.Unpriced, r.UnpricedModels = unpriced, []string{model}
			}
		}
		i, seen := at[r.Key]
		if !seen {
			at[r.Key] = len(out)
			out = append(out, r)
			continue
		}
		t := &out[i]
		t.Calls, t.Usage, t.Cost, t.Unpriced = t.Calls+r.Calls, t.Usage.Add(r.Usage), t.Cost+r.Cost, t.Unpriced+r.Unpriced
		t.UnpricedModels = append(t.UnpricedModels, r.UnpricedModels...)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if dim != "day" {
		sort.SliceStable(out, func(i, j int) bool { return out[i].Cost > out[j].Cost })
	}
	return out, nil
}

// Day is the total cost of one day (YYYY-MM-DD).
func Day(ctx context.Context, db *projections.Reader, day string) (float64, error) {
	var c sql.NullFloat64
	err := db.QueryRowContext(ctx, `SELECT sum(cost) FROM costs WHERE day = ?`, day).Scan(&c)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return c.Float64, err
}

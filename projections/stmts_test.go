package projections

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes-go/hermes/events"
)

// countModel counts the events it is given in a table.
type countModel struct{ version int }

func (countModel) Name() string      { return "count" }
func (m countModel) Version() int    { return m.version }
func (countModel) Forget()           {}
func (countModel) Flush(*Tx) error   { return nil }
func (countModel) Drop(tx *Tx) error { _, err := tx.Exec(`DROP TABLE IF EXISTS counted`); return err }
func (countModel) Create(tx *Tx) error {
	return tx.ExecSchema(`CREATE TABLE IF NOT EXISTS counted (stream TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID`)
}
func (countModel) Apply(tx *Tx, ev Event) error {
	_, err := tx.Exec(`INSERT INTO counted (stream, n) VALUES (?, 1) ON CONFLICT (stream) DO UPDATE SET n = n + 1`, ev.Stream)
	return err
}

// TestPreparedStatements: after its first batch a model's statements and
// the checkpoint's run prepared, with the same results as unprepared; a
// model whose tables are dropped and made again (a new version) is still
// applied right through the statements prepared on the old tables; and a
// statement that fails fails the batch, prepared or not, and loses nothing.
func TestPreparedStatements(t *testing.T) {
	ctx := context.Background()
	db, err := OpenDB(filepath.Join(t.TempDir(), "projections.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p := db.Projection(countModel{version: 1}).(*tableProjection)
	pos := uint64(0)
	batch := func(streams ...string) error {
		var evs []Event
		for _, s := range streams {
			pos++
			evs = append(evs, Event{Recorded: events.Recorded{Stream: s, Position: pos}})
		}
		return p.Apply(ctx, evs)
	}
	for range 5 {
		if err := batch("a", "b", "a"); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(db.stmts.m); n < 3 {
		t.Fatalf("%d statements prepared after 5 batches, want the model's and the checkpoint's", n)
	}
	count := func(s string) int {
		var n int
		if err := db.r.QueryRow(`SELECT n FROM counted WHERE stream = ?`, s).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if a, b := count("a"), count("b"); a != 10 || b != 5 {
		t.Fatalf("a %d, b %d; want 10 and 5", a, b)
	}
	// A new version: the tables are dropped and made again in the batch's
	// transaction; the prepared statements follow the new schema.
	p.m = countModel{version: 2}
	p.ready.Store(false)
	if err := batch("c"); err != nil {
		t.Fatal(err)
	}
	if err := batch("c", "a"); err != nil {
		t.Fatal(err)
	}
	if c, a := count("c"), count("a"); c != 2 || a != 1 {
		t.Fatalf("after the new version c %d, a %d; want 2 and 1", c, a)
	}
	// The table gone under a prepared statement: the batch fails, its
	// checkpoint stays where it was.
	before, err := p.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.w.Exec(`DROP TABLE counted`); err != nil {
		t.Fatal(err)
	}
	if err := batch("d"); err == nil {
		t.Fatal("a batch into a dropped table succeeded")
	}
	if after, _ := p.Checkpoint(ctx); after != before {
		t.Fatalf("the checkpoint moved from %d to %d with a failed batch", before, after)
	}
}

// namedCount is countModel with a table of its own per name.
type namedCount struct{ name string }

func (m namedCount) Name() string  { return m.name }
func (namedCount) Version() int    { return 1 }
func (namedCount) Forget()         {}
func (namedCount) Flush(*Tx) error { return nil }
func (m namedCount) Drop(tx *Tx) error {
	_, err := tx.Exec(`DROP TABLE IF EXISTS counted_` + m.name)
	return err
}
func (m namedCount) Create(tx *Tx) error {
	return tx.ExecSchema(`CREATE TABLE IF NOT EXISTS counted_` + m.name + ` (stream TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID`)
}
func (m namedCount) Apply(tx *Tx, ev Event) error {
	_, err := tx.Exec(`INSERT INTO counted_`+m.name+` (stream, n) VALUES (?, 1) ON CONFLICT (stream) DO UPDATE SET n = n + 1`, ev.Stream)
	return err
}

// TestPreparedStatementsConcurrentProjections: projections of one database
// written at once, each preparing its statements after its first batches
// while the others hold the writer's one connection, all finish (preparing
// once waited for the connection while holding the cache's lock, which the
// transaction holding the connection needed: a deadlock that hung a chat).
func TestPreparedStatementsConcurrentProjections(t *testing.T) {
	ctx := context.Background()
	db, err := OpenDB(filepath.Join(t.TempDir(), "projections.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const projs, batches = 8, 30
	done := make(chan error, projs)
	for i := range projs {
		p := db.Projection(namedCount{name: fmt.Sprint("p", i)}).(*tableProjection)
		go func() {
			for b := range batches {
				ev := Event{Recorded: events.Recorded{Stream: "s", Position: uint64(b + 1)}}
				if err := p.Apply(ctx, []Event{ev}); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	timeout := time.After(30 * time.Second)
	for range projs {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-timeout:
			t.Fatal("projections writing at once did not finish in 30 s (deadlocked)")
		}
	}
}

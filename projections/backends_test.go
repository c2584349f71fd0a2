package projections_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/events/postgres/pgtest"
	"github.com/hermes-go/hermes/projections"
)

// backend makes projections databases of one kind: SQLite files, or
// PostgreSQL databases of a real server (started once for the package, on
// the first test that needs it).
type backend struct {
	name string
	// fresh says where a new, empty database is.
	fresh func(t testing.TB) string
	// open opens the database at where (another handle on the same
	// database each call, as another process would have); it is closed
	// when the test ends.
	open func(t testing.TB, where string) *projections.DB
}

var (
	pgOnce sync.Once
	pgSrv  *pgtest.Server
	pgErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if pgSrv != nil {
		pgSrv.Stop()
	}
	os.Exit(code)
}

// pgServer is the package's PostgreSQL server; without one the test is
// skipped, or fails under CI.
func pgServer(t testing.TB) *pgtest.Server {
	t.Helper()
	pgOnce.Do(func() { pgSrv, pgErr = pgtest.Launch() })
	if errors.Is(pgErr, pgtest.ErrUnavailable) {
		pgtest.Unavailable(t)
	}
	if pgErr != nil {
		t.Fatal(pgErr)
	}
	return pgSrv
}

var sqliteDB = backend{
	name:  "sqlite",
	fresh: func(t testing.TB) string { return filepath.Join(t.TempDir(), "projections.db") },
	open: func(t testing.TB, where string) *projections.DB {
		t.Helper()
		db, err := projections.OpenDB(where)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	},
}

var postgresDB = backend{
	name:  "postgres",
	fresh: func(t testing.TB) string { return pgServer(t).Database(t) },
	open: func(t testing.TB, where string) *projections.DB {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		db, err := projections.OpenPostgres(ctx, where)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	},
}

var backends = []backend{sqliteDB, postgresDB}

// eachDB runs fn as a subtest on every kind of projections database.
func eachDB(t *testing.T, fn func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { fn(t, b) })
	}
}

// openEnvOn opens an embedded store in dir and the projections database
// at where, with a runner of models (the session list and history when
// none).
func openEnvOn(t *testing.T, b backend, dir, where string, models ...projections.Model) *env {
	t.Helper()
	return newEnv(t, dir, b.open(t, where), models...)
}

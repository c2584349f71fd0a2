package projections

import (
	"strings"
	"testing"
)

func TestRebind(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`SELECT a FROM t WHERE x = ? AND y < ?`, `SELECT a FROM t WHERE x = $1 AND y < $2`},
		{`SELECT '?' , ? FROM t`, `SELECT '?' , $1 FROM t`},
		{`SELECT 'it''s ?', ?`, `SELECT 'it''s ?', $1`},
		{`SELECT "odd?name" FROM t WHERE a = ?`, `SELECT "odd?name" FROM t WHERE a = $1`},
		{"SELECT ? -- why?\nFROM t WHERE a = ?", "SELECT $1 -- why?\nFROM t WHERE a = $2"},
		{`SELECT a - ? FROM t`, `SELECT a - $1 FROM t`},
		{`SELECT 'unterminated ?`, `SELECT 'unterminated ?`},
		{strings.Repeat("?,", 11) + "?", "$1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12"},
	} {
		if got := rebind(c.in); got != c.want {
			t.Errorf("rebind(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	b := &binder{}
	if q := `SELECT ?`; b.bind(q) != q {
		t.Error("SQLite queries changed")
	}
}

func TestSchemaFor(t *testing.T) {
	ddl := `CREATE TABLE IF NOT EXISTS t (id TEXT PRIMARY KEY, n INTEGER NOT NULL, cost REAL NOT NULL, b BLOB NOT NULL, texts TEXT NOT NULL DEFAULT '') WITHOUT ROWID;
		CREATE INDEX IF NOT EXISTS t_n ON t (n)`
	if got := schemaFor(false, ddl); got != ddl {
		t.Fatalf("SQLite DDL changed: %s", got)
	}
	want := `CREATE TABLE IF NOT EXISTS t (id TEXT COLLATE "C" PRIMARY KEY, n BIGINT NOT NULL, cost DOUBLE PRECISION NOT NULL, b BYTEA NOT NULL, texts TEXT COLLATE "C" NOT NULL DEFAULT '');
		CREATE INDEX IF NOT EXISTS t_n ON t (n)`
	if got := schemaFor(true, ddl); got != want {
		t.Fatalf("PostgreSQL DDL\n got %s\nwant %s", got, want)
	}
}

func TestUpsert(t *testing.T) {
	for _, c := range []struct{ table, key, cols, want string }{
		{"origins", "name", "name, log", `INSERT INTO origins (name, log) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET log = excluded.log`},
		{"h", "a, b", "a,\n\tb, c", `INSERT INTO h (a, b, c) VALUES (?, ?, ?) ON CONFLICT (a, b) DO UPDATE SET c = excluded.c`},
		{"k", "a", "a", `INSERT INTO k (a) VALUES (?) ON CONFLICT (a) DO NOTHING`},
	} {
		if got := Upsert(c.table, c.key, c.cols); got != c.want {
			t.Errorf("Upsert(%q, %q, %q)\n got %s\nwant %s", c.table, c.key, c.cols, got, c.want)
		}
	}
}

func TestPrefixBound(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"abcd", "abce", true},
		{"ab\u00ff", "ab\u0100", true},
		{"a\uD7FF", "a\uE000", true},
		{"ab\U0010FFFF", "ac", true},
		{"\U0010FFFF\U0010FFFF", "", false},
		{"ab\xff", "", false},
	} {
		got, ok := PrefixBound(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("PrefixBound(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	// Every string with the prefix sorts inside [prefix, bound), byte-wise.
	p := "caf\u00e9"
	bound, _ := PrefixBound(p)
	for _, s := range []string{p, p + "\x00", p + "\U0010FFFF\U0010FFFF", p + "zzz"} {
		if !(s >= p && s < bound) {
			t.Errorf("%q is outside [%q, %q)", s, p, bound)
		}
	}
	for _, s := range []string{"caf", "cafe\u0301", "cag", bound} {
		if s >= p && s < bound {
			t.Errorf("%q is inside [%q, %q)", s, p, bound)
		}
	}
}

func TestInserterStatements(t *testing.T) {
	tx := &Tx{b: &binder{pg: true}}
	if _, err := tx.Inserter(`UPDATE t SET a = ?`); err == nil {
		t.Fatal("an UPDATE taken for an insert")
	}
	if _, err := tx.Inserter(`INSERT INTO t (a, b) VALUES (?, lower(?))`); err == nil {
		t.Fatal("VALUES with an expression taken")
	}
	ins, err := tx.Inserter(Upsert("t", "a", "a, b"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ins.Add(1); err == nil || !strings.Contains(err.Error(), "1 values for 2 columns") {
		t.Fatalf("a short row: %v", err)
	}
	want := `INSERT INTO t (a, b) VALUES (?, ?), (?, ?), (?, ?) ON CONFLICT (a) DO UPDATE SET b = excluded.b`
	if got := ins.statement(3); got != want {
		t.Fatalf("three rows:\n got %s\nwant %s", got, want)
	}
	if got := rebind(ins.statement(2)); !strings.Contains(got, "($1, $2), ($3, $4) ON CONFLICT") {
		t.Fatalf("rebound: %s", got)
	}
}

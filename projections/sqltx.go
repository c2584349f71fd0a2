package projections

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// The projections database is SQLite (a home's projections.db) or
// PostgreSQL (shared by every process of a cluster). Models write one SQL
// for both: `?` placeholders, which Tx and Reader number as $1, $2, … for
// PostgreSQL; upserts as INSERT … ON CONFLICT (Upsert); and tables in
// SQLite's type names through (*Tx).ExecSchema.

// dialect is the kind of database a DB is.
type dialect uint8

const (
	dialectSQLite dialect = iota
	dialectPostgres
)

// binder rewrites queries for a dialect, remembering what it rewrote
// (models send the same few statements over and over).
type binder struct {
	pg    bool
	cache sync.Map // query -> rebound query
	multi sync.Map // multiKey -> statement of several rows (Inserter)
}

func (b *binder) bind(q string) string {
	if !b.pg {
		return q
	}
	if v, ok := b.cache.Load(q); ok {
		return v.(string)
	}
	out := rebind(q)
	b.cache.Store(q, out)
	return out
}

// rebind numbers the ? placeholders of q as $1, $2, … outside quoted
// strings, quoted identifiers and comments.
func rebind(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch c {
		case '\'', '"':
			// To the closing quote; a doubled quote inside is an escaped
			// one, and is crossed as a close and a reopen.
			j := strings.IndexByte(q[i+1:], c)
			if j < 0 {
				b.WriteString(q[i:])
				return b.String()
			}
			b.WriteString(q[i : i+j+2])
			i += j + 1
		case '-':
			if i+1 < len(q) && q[i+1] == '-' {
				j := strings.IndexByte(q[i:], '\n')
				if j < 0 {
					b.WriteString(q[i:])
					return b.String()
				}
				b.WriteString(q[i : i+j+1])
				i += j
				continue
			}
			b.WriteByte(c)
		case '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Tx is the write transaction a Model applies events in: a *sql.Tx whose
// statements are written with ? placeholders on either database.
type Tx struct {
	tx  *sql.Tx
	ctx context.Context
	b   *binder
	// stmts are the writer's prepared statements (SQLite; nil on
	// PostgreSQL), and unprepared the statements run without one, to be
	// prepared once the transaction has ended.
	stmts      *stmts
	unprepared []string
}

// stmt returns q's prepared statement in the transaction, or nil (noting
// q, to be prepared for the next transaction).
func (t *Tx) stmt(q string) *sql.Stmt {
	if t.stmts == nil {
		return nil
	}
	if st := t.stmts.get(q); st != nil {
		return t.tx.StmtContext(t.ctx, st)
	}
	t.unprepared = append(t.unprepared, q)
	return nil
}

// Exec runs a statement.
func (t *Tx) Exec(q string, args ...any) (sql.Result, error) {
	if st := t.stmt(q); st != nil {
		return st.ExecContext(t.ctx, args...)
	}
	return t.tx.ExecContext(t.ctx, t.b.bind(q), args...)
}

// Query runs a query.
func (t *Tx) Query(q string, args ...any) (*sql.Rows, error) {
	if st := t.stmt(q); st != nil {
		return st.QueryContext(t.ctx, args...)
	}
	return t.tx.QueryContext(t.ctx, t.b.bind(q), args...)
}

// QueryRow runs a query of at most one row.
func (t *Tx) QueryRow(q string, args ...any) *sql.Row {
	if st := t.stmt(q); st != nil {
		return st.QueryRowContext(t.ctx, args...)
	}
	return t.tx.QueryRowContext(t.ctx, t.b.bind(q), args...)
}

// Prepare prepares a statement for the rest of the transaction.
func (t *Tx) Prepare(q string) (*sql.Stmt, error) {
	return t.tx.PrepareContext(t.ctx, t.b.bind(q))
}

// Postgres reports whether the transaction is PostgreSQL's, for the rare
// statement the two databases cannot share.
func (t *Tx) Postgres() bool { return t.b.pg }

// ExecSchema runs DDL written for SQLite (types TEXT, INTEGER, REAL, BLOB;
// tables WITHOUT ROWID). On PostgreSQL the types become TEXT COLLATE "C"
// (text sorts by bytes, as in SQLite), BIGINT (SQLite's integers are 64
// bits), DOUBLE PRECISION and BYTEA, and WITHOUT ROWID goes.
func (t *Tx) ExecSchema(ddl string) error {
	_, err := t.tx.ExecContext(t.ctx, schemaFor(t.b.pg, ddl))
	return err
}

var pgTypes = strings.NewReplacer("TEXT", `TEXT COLLATE "C"`, "INTEGER", "BIGINT", "REAL", "DOUBLE PRECISION", "BLOB", "BYTEA")

var sqliteOnly = regexp.MustCompile(`\s*WITHOUT ROWID`)

var typeWord = regexp.MustCompile(`\b(TEXT|INTEGER|REAL|BLOB)\b`)

func schemaFor(pg bool, ddl string) string {
	if !pg {
		return ddl
	}
	ddl = sqliteOnly.ReplaceAllString(ddl, "")
	return typeWord.ReplaceAllStringFunc(ddl, pgTypes.Replace)
}

// Reader runs the queries of read commands, with ? placeholders on either
// database.
type Reader struct {
	db *sql.DB
	b  *binder
}

// QueryContext runs a query.
func (r *Reader) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return r.db.QueryContext(ctx, r.b.bind(q), args...)
}

// QueryRowContext runs a query of at most one row.
func (r *Reader) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return r.db.QueryRowContext(ctx, r.b.bind(q), args...)
}

// Upsert is the statement that inserts a row of cols (a comma-separated
// list) into table, replacing the row with the same key (the columns of
// the primary key, comma-separated): SQLite's INSERT OR REPLACE, written
// as both databases take it.
func Upsert(table, key, cols string) string {
	names := strings.Split(cols, ",")
	keys := map[string]bool{}
	for _, k := range strings.Split(key, ",") {
		keys[strings.TrimSpace(k)] = true
	}
	var set []string
	for i, c := range names {
		c = strings.TrimSpace(c)
		names[i] = c
		if !keys[c] {
			set = append(set, c+" = excluded."+c)
		}
	}
	q := "INSERT INTO " + table + " (" + strings.Join(names, ", ") + ") VALUES (" +
		strings.TrimSuffix(strings.Repeat("?, ", len(names)), ", ") + ") ON CONFLICT (" + key + ") DO "
	if len(set) == 0 {
		return q + "NOTHING"
	}
	return q + "UPDATE SET " + strings.Join(set, ", ")
}

// PrefixBound returns the least string above every string that starts
// with prefix, in byte order (SQLite's, and PostgreSQL's COLLATE "C"):
// strings with the prefix are exactly those in [prefix, bound). ok is
// false when there is none (a prefix of U+10FFFF runes only) or prefix is
// not valid UTF-8 (PostgreSQL refuses such text).
func PrefixBound(prefix string) (bound string, ok bool) {
	if !utf8.ValidString(prefix) {
		return "", false
	}
	rs := []rune(prefix)
	for i := len(rs) - 1; i >= 0; i-- {
		r := rs[i] + 1
		if r == 0xD800 {
			r = 0xE000 // past the surrogates, which UTF-8 cannot hold
		}
		if r <= utf8.MaxRune {
			rs[i] = r
			return string(rs[:i+1]), true
		}
	}
	return "", false
}

// Inserter writes rows. On PostgreSQL it sends a few hundred rows a
// statement: every statement is a round trip to the server, which one per
// row would spend most of a batch's time on (a rebuild of the four models
// ran at about 0.6× the speed). On SQLite, in the process, one prepared
// statement per row is faster than parsing long ones.
type Inserter struct {
	tx   *Tx
	one  string    // the statement of one row
	stmt *sql.Stmt // SQLite: one prepared for the transaction
	// head and tail surround the VALUES tuples; tuple is one row's.
	head, tuple, tail string
	width             int
	args              []any
	rows              int
}

// maxInsertRows bounds the rows of one statement (and with them its
// parameters, which both databases limit).
const maxInsertRows = 256

// Inserter returns an Inserter of the rows of insert, a statement
// `INSERT … VALUES (?, …) [ON CONFLICT …]` of one row (an upsert may not
// meet the same key twice in one statement: add each key once). Close
// writes what is left.
func (t *Tx) Inserter(insert string) (*Inserter, error) {
	i := strings.Index(insert, "VALUES (")
	if i < 0 {
		return nil, fmt.Errorf("not an INSERT … VALUES (…): %.60s", insert)
	}
	i += len("VALUES ")
	j := i + strings.IndexByte(insert[i:], ')') + 1
	tuple := insert[i:j]
	if strings.Trim(tuple, "(?, )") != "" {
		return nil, fmt.Errorf("VALUES holds more than placeholders: %.60s", insert)
	}
	return &Inserter{tx: t, one: insert, head: insert[:i], tuple: tuple, tail: insert[j:], width: strings.Count(tuple, "?")}, nil
}

// Add adds a row.
func (u *Inserter) Add(vals ...any) error {
	if len(vals) != u.width {
		return fmt.Errorf("%d values for %d columns: %.60s", len(vals), u.width, u.head)
	}
	if !u.tx.b.pg {
		if u.stmt == nil {
			stmt, err := u.tx.Prepare(u.one)
			if err != nil {
				return err
			}
			u.stmt = stmt
		}
		_, err := u.stmt.ExecContext(u.tx.ctx, vals...)
		return err
	}
	u.args = append(u.args, vals...)
	u.rows++
	if u.rows == maxInsertRows {
		return u.flush(u.rows)
	}
	return nil
}

// Close writes the rows not yet written, in statements of a power of two
// rows each, so that a handful of statements serve every count.
func (u *Inserter) Close() error {
	if u.stmt != nil {
		return u.stmt.Close()
	}
	for u.rows > 0 {
		n := 1
		for n*2 <= u.rows {
			n *= 2
		}
		if err := u.flush(n); err != nil {
			return err
		}
	}
	return nil
}

// flush writes the first n rows gathered.
func (u *Inserter) flush(n int) error {
	if _, err := u.tx.Exec(u.statement(n), u.args[:n*u.width]...); err != nil {
		return err
	}
	u.args = append(u.args[:0], u.args[n*u.width:]...)
	u.rows -= n
	return nil
}

// statement is the statement of n rows.
func (u *Inserter) statement(n int) string {
	k := multiKey{u.head, u.tail, n}
	if q, ok := u.tx.b.multi.Load(k); ok {
		return q.(string)
	}
	q := u.head + strings.TrimSuffix(strings.Repeat(u.tuple+", ", n), ", ") + u.tail
	u.tx.b.multi.Store(k, q)
	return q
}

type multiKey struct {
	head, tail string
	rows       int
}

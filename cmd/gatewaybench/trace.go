package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-go/hermes/events/postgres/pgtest"
)

// columns is the event store's column list, shown as * in the trace.
const columns = "position, stream, revision, id, type, version, session_id, time_ns, turn_id, causation_id, payload"

// traceTurns sends n requests one at a time (each a new conversation)
// with the server logging every statement, then prints the statements
// of the cluster's database by process (its connections'
// application_name) and, per process, how many transactions (virtual
// transaction ids) and statements the requests took. What the processes
// run on a timer (subscriptions polling) shows among them.
func traceTurns(pg *pgtest.Server, n int, post func(i int) error) error {
	logFile := pg.LogFile()
	if logFile == "" {
		return fmt.Errorf("-trace needs a server of its own (not HERMES_PG_URL's): it reads the server's log")
	}
	set := func(stmts ...string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, pg.URL)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		for _, s := range append(stmts, "SELECT pg_reload_conf()") {
			if _, err := conn.Exec(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		return nil
	}
	if err := set("ALTER SYSTEM SET log_statement = 'all'", "ALTER SYSTEM SET log_line_prefix = '%m|%d|%a|%p|%v| '"); err != nil {
		return err
	}
	defer set("ALTER SYSTEM RESET log_statement", "ALTER SYSTEM RESET log_line_prefix")
	time.Sleep(500 * time.Millisecond)
	st, err := os.Stat(logFile)
	if err != nil {
		return err
	}
	from := st.Size()
	start := time.Now()
	for i := range n {
		if err := post(1_000_000 + i); err != nil {
			return fmt.Errorf("traced request: %w", err)
		}
	}
	took := time.Since(start)
	// What follows a turn (projections folding it) lands within the
	// subscriptions' settle and linger.
	time.Sleep(2 * time.Second)
	f, err := os.Open(logFile)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	type proc struct {
		stmts int
		txs   map[string]bool
	}
	procs := map[string]*proc{}
	fmt.Printf("statements of %d request(s) sent one at a time (%s), and 2 s after them:\n", n, took.Round(time.Millisecond))
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, "|", 6)
		if len(f) < 6 || f[1] != "gatewaybench" || f[2] == "" {
			continue
		}
		msg := strings.TrimSpace(f[5])
		var stmt string
		switch {
		case strings.HasPrefix(msg, "DETAIL:  parameters: "):
			if procs[f[2]] != nil {
				d := strings.TrimPrefix(msg, "DETAIL:  parameters: ")
				if len(d) > 110 {
					d = d[:110]
				}
				fmt.Printf("  %50s %s\n", "", d)
			}
			continue
		case strings.HasPrefix(msg, "LOG:  statement: "):
			stmt = strings.TrimPrefix(msg, "LOG:  statement: ")
		case strings.HasPrefix(msg, "LOG:  execute "):
			stmt = msg[strings.Index(msg, ": ")+2:]
			stmt = stmt[strings.Index(stmt, ": ")+2:]
		default:
			continue
		}
		p := procs[f[2]]
		if p == nil {
			p = &proc{txs: map[string]bool{}}
			procs[f[2]] = p
		}
		p.stmts++
		p.txs[f[4]] = true
		stmt = strings.ReplaceAll(strings.Join(strings.Fields(stmt), " "), columns, "*")
		if len(stmt) > 150 {
			stmt = stmt[:150]
		}
		ts := f[0]
		if len(ts) > 12 {
			ts = ts[11:] // the clock, without the date
		}
		fmt.Printf("  %s %-8s pid %-6s tx %-8s %s\n", ts, f[2], f[3], f[4], stmt)
	}
	names := make([]string, 0, len(procs))
	for name := range procs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := procs[name]
		fmt.Printf("  %-8s %.1f transactions, %.1f statements per request\n", name, float64(len(p.txs))/float64(n), float64(p.stmts)/float64(n))
	}
	return nil
}

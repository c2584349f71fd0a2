// Package sqlite owns how Hermes opens a SQLite file (pure-Go driver, WAL
// mode, a long busy timeout): the embedded event store and the projections
// kept beside it open theirs the same way, so that several processes can
// share the files.
package sqlite

import (
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"syscall"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Open opens a SQLite file the way Hermes uses it everywhere: WAL
// (readers never block the writer, several processes may share the file)
// and a long busy timeout instead of "database is locked". With durable, a
// commit is on disk when it returns (synchronous=FULL); without, it may be
// lost on power failure but never torn (synchronous=NORMAL), which suits
// data that can be rebuilt. A writer handle has one connection whose
// transactions take the write lock at BEGIN.
func Open(path string, writer, durable bool) (*sql.DB, error) {
	lock := ""
	if writer {
		lock = "immediate"
	}
	sync := "FULL"
	if !durable {
		sync = "NORMAL"
	}
	db, err := sql.Open("sqlite", dsnWith(url.Values{}, path, lock, sync, cachePages(writer)))
	if err != nil {
		return nil, err
	}
	if writer {
		db.SetMaxOpenConns(1)
		db.SetConnMaxIdleTime(0)
	} else {
		db.SetMaxOpenConns(4)
	}
	return db, nil
}

// openReadOnly opens a SQLite file for reading only (mode=ro: the file is
// opened read-only, so nothing can write it; query_only is not set, as it
// would refuse VACUUM INTO a copy too): the file, its directory and its -shm
// need not be writable. immutable tells SQLite
// that nothing else changes the file either, so it takes no locks and needs
// no -shm at all: for a home nobody can write.
func openReadOnly(path string, immutable bool) (*sql.DB, error) {
	q := url.Values{}
	q.Add("mode", "ro")
	if immutable {
		q.Add("immutable", "1")
	}
	q.Add("_pragma", "busy_timeout(30000)")
	q.Add("_pragma", "mmap_size(268435456)")
	q.Add("_pragma", cachePages(false))
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	return db, nil
}

// OpenReadOnly opens a SQLite file Hermes keeps for reading only: the
// file itself is never written. Where its directory cannot be written
// (a read-only home) and no write-ahead log is left beside it, SQLite is
// told the file is immutable, as it then must be, and needs no -shm; where
// a write-ahead log holds commits, it is read through the -wal and -shm
// files, which must then exist. In a writable directory SQLite may create
// those two files, as every reader of a WAL database does.
func OpenReadOnly(path string) (*sql.DB, error) {
	immutable := false
	if !Writable(filepath.Dir(path)) {
		info, err := os.Stat(path + "-wal")
		immutable = err != nil || info.Size() == 0
	}
	return openReadOnly(path, immutable)
}

// Writable reports whether this process may write path (a file or a
// directory). Note that for root it is true of almost everything.
func Writable(path string) bool { return syscall.Access(path, 2 /* W_OK */) == nil }

// DSN is the data source name Open uses for the file at path (txlock ""
// or "immediate", sync "FULL" or "NORMAL"), for a handle opened some other
// way: tests that reach behind a store.
func DSN(path, txlock, sync string) string {
	q := url.Values{}
	return dsnWith(q, path, txlock, sync, cachePages(txlock != ""))
}

// OpenExisting is Open (durable) for a file that must already exist: a
// connection (re)opened after the file was deleted fails instead of
// creating an empty database in its place.
func OpenExisting(path string, writer bool) (*sql.DB, error) {
	lock := ""
	if writer {
		lock = "immediate"
	}
	q := url.Values{}
	q.Add("mode", "rw")
	db, err := sql.Open("sqlite", dsnWith(q, path, lock, "FULL", cachePages(writer)))
	if err != nil {
		return nil, err
	}
	if writer {
		db.SetMaxOpenConns(1)
		db.SetConnMaxIdleTime(0)
	} else {
		db.SetMaxOpenConns(4)
	}
	return db, nil
}

// cachePages is the page cache pragma of a connection: 2 MiB for a
// reader, which reads the file through its memory map (mmap_size) and
// needs few pages of its own, 8 MiB for a writer, which keeps the pages it
// changed. With 32 MiB for every connection a long-running gateway's
// caches kept filling: memory outside the Go heap grew 62–63 MiB in a
// 3-minute soak whether the readers had 32 or 2 MiB (the writers' caches
// filling), 19 MiB with 2 MiB for all.
func cachePages(writer bool) string {
	if writer {
		return "cache_size(-8192)"
	}
	return "cache_size(-2048)"
}

func dsnWith(q url.Values, path, txlock, sync, cache string) string {
	q.Add("_pragma", "busy_timeout(30000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+sync+")")
	q.Add("_pragma", "foreign_keys(OFF)")
	q.Add("_pragma", "mmap_size(268435456)")
	q.Add("_pragma", cache)
	if txlock != "" {
		q.Add("_txlock", txlock)
	}
	return "file:" + path + "?" + q.Encode()
}

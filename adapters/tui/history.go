package tui

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"
)

// History is what was typed at the prompt, oldest first, shared by every
// chat of a home: loaded from its file at start and appended to at each
// message, so that several chats at once each add theirs.
//
// The file uses prompt_toolkit's FileHistory layout (the Python Hermes
// Agent's line editor): an entry is a "# time" line followed by its lines,
// each prefixed with "+", so multi-line messages stay one entry.
type History struct {
	mu      sync.Mutex
	path    string
	entries []string
}

// maxHistoryEntry bounds what is kept of one message: a pasted file is
// sent, not remembered.
const maxHistoryEntry = 64 << 10

// maxHistoryLoaded bounds the entries read at start (the newest are kept).
const maxHistoryLoaded = 10000

// LoadHistory reads the history file at path; a missing file is an empty
// history. An empty path keeps the history in memory only.
func LoadHistory(path string) (*History, error) {
	h := &History{path: path}
	if path == "" {
		return h, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxHistoryEntry+64)
	var cur []string
	open := false
	end := func() {
		if open {
			h.entries = append(h.entries, strings.Join(cur, "\n"))
		}
		cur, open = cur[:0], false
	}
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "+"); ok {
			cur, open = append(cur, rest), true
			continue
		}
		end()
	}
	end()
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read history %s: %w", path, err)
	}
	if len(h.entries) > maxHistoryLoaded {
		h.entries = h.entries[len(h.entries)-maxHistoryLoaded:]
	}
	return h, nil
}

// Add appends entry, unless it is empty, too long, or the same as the
// entry before it. The file is written with one append, so chats sharing
// it do not interleave their entries.
func (h *History) Add(entry string) error {
	if strings.TrimSpace(entry) == "" || len(entry) > maxHistoryEntry {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.entries); n > 0 && h.entries[n-1] == entry {
		return nil
	}
	h.entries = append(h.entries, entry)
	if h.path == "" {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n# %s\n", time.Now().Format("2006-01-02 15:04:05.000000"))
	for _, l := range strings.Split(entry, "\n") {
		b.WriteString("+")
		b.WriteString(l)
		b.WriteString("\n")
	}
	f, err := os.OpenFile(h.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("save history: %w", err)
	}
	_, err = f.WriteString(b.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("save history %s: %w", h.path, err)
	}
	return nil
}

// Len is the number of entries.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.entries)
}

// At is entry i, 0 the oldest.
func (h *History) At(i int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.entries[i]
}

// Search finds the newest entry before index before that contains query
// (case-insensitive): Ctrl-R goes back through the matches this way.
func (h *History) Search(query string, before int) (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := strings.ToLower(query)
	for i := min(before, len(h.entries)) - 1; i >= 0; i-- {
		if strings.Contains(strings.ToLower(h.entries[i]), q) {
			return i, true
		}
	}
	return -1, false
}

package files

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// errScanBudget ends a scan that reached its byte budget before the end
// of the file.
var errScanBudget = errors.New("scan budget reached")

// lineScanner reads a file line by line keeping at most a given number of
// bytes of each line, so that a file with an endless line (or no newline
// at all) costs its buffer, not its size.
type lineScanner struct {
	r *bufio.Reader
	// n is the number of bytes consumed so far.
	n int64
	// stop, when positive, is the offset past which next reads no more
	// (errScanBudget).
	stop int64
	buf  []byte
}

func newLineScanner(r *bufio.Reader) *lineScanner { return &lineScanner{r: r} }

// next returns the next line without its newline, up to keep bytes of it
// (valid until the following call), and whether the line was longer. At
// the end of the file it returns io.EOF; past the budget errScanBudget,
// with the part of the line read until then.
func (s *lineScanner) next(keep int) (line []byte, cut bool, err error) {
	s.buf = s.buf[:0]
	started := false
	for {
		if s.stop > 0 && s.n >= s.stop {
			return s.buf, true, errScanBudget
		}
		chunk, err := s.r.ReadSlice('\n')
		s.n += int64(len(chunk))
		started = started || len(chunk) > 0
		body := chunk
		if err == nil {
			body = chunk[:len(chunk)-1]
		}
		room := max(keep-len(s.buf), 0)
		s.buf = append(s.buf, body[:min(room, len(body))]...)
		cut = cut || len(body) > room
		switch {
		case err == nil:
			return s.buf, cut, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if !started {
				return nil, false, io.EOF
			}
			return s.buf, cut, nil
		default:
			return s.buf, cut, err
		}
	}
}

// clipUTF8 cuts b to at most n bytes without splitting a character.
func clipUTF8(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	b = b[:n]
	for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.Valid(b); i++ {
		b = b[:len(b)-1]
	}
	return b
}

// size spells a byte count the way people read it.
func size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

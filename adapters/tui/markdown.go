package tui

import (
	"strings"
	"sync"

	"charm.land/glamour/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
)

// blocks cuts streamed Markdown into blocks that can be rendered on their
// own: text up to the last blank line outside a code fence is complete
// (nothing that follows can change how it renders); the rest waits for
// more text.
type blocks struct {
	buf strings.Builder
}

// add appends streamed text and returns the blocks it completed ("" when
// none).
func (b *blocks) add(text string) string {
	b.buf.WriteString(text)
	s := b.buf.String()
	cut := completeUpTo(s)
	if cut == 0 {
		return ""
	}
	done, rest := s[:cut], s[cut:]
	b.buf.Reset()
	b.buf.WriteString(rest)
	return done
}

// rest is the incomplete text, as streamed.
func (b *blocks) rest() string { return b.buf.String() }

// flush returns everything left and empties the buffer.
func (b *blocks) flush() string {
	s := b.buf.String()
	b.buf.Reset()
	return s
}

// completeUpTo is the end of the last blank line of s outside a code
// fence (0: none). Only whole lines count: the last line may still grow.
func completeUpTo(s string) int {
	cut, fence, pos := 0, "", 0
	for {
		nl := strings.IndexByte(s[pos:], '\n')
		if nl < 0 {
			return cut
		}
		line := s[pos : pos+nl]
		pos += nl + 1
		t := strings.TrimSpace(line)
		switch {
		case fence != "":
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				fence = ""
			}
		case strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~"):
			fence = t[:3]
		case t == "":
			cut = pos
		}
	}
}

// markdown renders Markdown for the terminal: glamour with a dark or light
// style, its colours then brought down to what the terminal shows (none
// with NO_COLOR: bold, italics and layout stay). Renderers are built once
// per width and style.
type markdown struct {
	mu      sync.Mutex
	profile colorprofile.Profile
	width   int
	dark    bool
	current *glamour.TermRenderer
}

func (m *markdown) render(text string, width int, dark bool) string {
	if strings.TrimSpace(text) == "" {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.current == nil || width != m.width || dark != m.dark {
		style := "dark"
		if !dark {
			style = "light"
		}
		r, err := glamour.NewTermRenderer(glamour.WithStandardStyle(style), glamour.WithWordWrap(max(width-4, 20)))
		if err != nil {
			return text
		}
		m.current, m.width, m.dark = r, width, dark
	}
	out, err := m.current.Render(text)
	if err != nil {
		return text
	}
	// The renderer pads blocks with lines that only hold styles: drop
	// those at either end, so blocks are spaced by the screen alone.
	lines := strings.Split(out, "\n")
	blank := func(l string) bool { return strings.TrimSpace(ansi.Strip(l)) == "" }
	for len(lines) > 0 && blank(lines[0]) {
		lines = lines[1:]
	}
	for len(lines) > 0 && blank(lines[len(lines)-1]) {
		lines = lines[:len(lines)-1]
	}
	return downsample(trimRight(strings.Join(lines, "\n")), m.profile)
}

// downsample brings the colours of s down to profile (none for ASCII).
func downsample(s string, profile colorprofile.Profile) string {
	if profile == colorprofile.TrueColor || profile == 0 {
		return s
	}
	var b strings.Builder
	w := &colorprofile.Writer{Forward: &b, Profile: profile}
	if _, err := w.Write([]byte(s)); err != nil {
		return ansi.Strip(s)
	}
	return b.String()
}

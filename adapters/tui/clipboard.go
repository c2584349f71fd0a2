package tui

import (
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// Clear clears the terminal's screen (/clear, between turns): what was
// printed goes, the prompt stays.
//
// The erase reaches the terminal with the screen's next frame, while a
// line printed goes at once: Clear waits for that frame, so what is
// printed after it stays.
func (s *Screen) Clear() {
	// The renderer's own clear repaints only its area: the lines printed
	// above it are erased here, then it redraws from the top.
	s.send(tea.Raw(ansi.EraseEntireScreen + ansi.CursorHomePosition)())
	s.send(tea.ClearScreen())
	time.Sleep(clearSettle)
}

// clearSettle is how long Clear waits for the frame that erases: a dozen
// frames at the screen's 120 per second.
const clearSettle = 100 * time.Millisecond

// Copy puts text on the clipboard of the terminal the screen is on, with
// an OSC 52 escape (/copy): it reaches the person's clipboard through SSH
// and tmux too, where the terminal allows it.
func (s *Screen) Copy(text string) {
	s.send(tea.SetClipboard(text)())
}

// Redraw draws the screen's area again (/redraw), as after a resize.
func (s *Screen) Redraw() {
	s.send(tea.ClearScreen())
}

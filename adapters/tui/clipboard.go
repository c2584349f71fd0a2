package tui

import tea "charm.land/bubbletea/v2"

// Clear clears the terminal's screen (/clear, between turns): what was
// printed goes, the prompt stays.
func (s *Screen) Clear() {
	s.send(tea.ClearScreen())
}

// Copy puts text on the clipboard of the terminal the screen is on, with
// an OSC 52 escape (/copy): it reaches the person's clipboard through SSH
// and tmux too, where the terminal allows it.
func (s *Screen) Copy(text string) {
	s.send(tea.SetClipboard(text)())
}

package command

import (
	"strings"
	"testing"
)

var surfaces = []Surface{Screen, Plain, Gateway}

func TestTableIsConsistent(t *testing.T) {
	for _, s := range surfaces {
		names := map[string]ID{}
		ids := map[ID]string{}
		for _, c := range s.Commands() {
			if c.ID == Unknown || !strings.HasPrefix(c.Name, "/") || c.Help == "" {
				t.Errorf("%s: entry %+v needs an ID, a slashed name and help", s, c)
			}
			if prev, ok := ids[c.ID]; ok {
				t.Errorf("%s: ID %d is both %s and %s", s, c.ID, prev, c.Name)
			}
			ids[c.ID] = c.Name
			for _, n := range append([]string{c.Name}, c.Aliases...) {
				if n != strings.ToLower(n) || strings.ContainsAny(n[1:], "/@ ") {
					t.Errorf("%s: name %q cannot be typed", s, n)
				}
				if prev, ok := names[n]; ok {
					t.Errorf("%s: %s names both command %d and %d", s, n, prev, c.ID)
				}
				names[n] = c.ID
			}
		}
	}
	for _, c := range All() {
		if c.On == 0 {
			t.Errorf("%s is offered nowhere", c.Name)
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		s        Surface
		line     string
		id       ID
		name     string
		arg      string
		notAtAll bool
	}{
		{s: Plain, line: "/new", id: New, name: "/new"},
		{s: Gateway, line: "/reset", id: New, name: "/new"},
		{s: Screen, line: "/reset", id: New, name: "/new"},
		{s: Gateway, line: "/start", id: Help, name: "/help"},
		{s: Screen, line: "/bg  write a poem ", id: Background, name: "/background", arg: "write a poem"},
		{s: Plain, line: "/quit", id: Exit, name: "/exit"},
		{s: Gateway, line: "/Model@hermes_bot  gpt-x", id: Model, name: "/model", arg: "gpt-x"},
		{s: Screen, line: "  /compress --force", id: Compress, name: "/compress", arg: "--force"},
		{s: Gateway, line: "/compress", id: Compress, name: "/compress"},
		{s: Screen, line: "/queue\tthen this\nand that", id: Queue, name: "/queue", arg: "then this\nand that"},
		{s: Gateway, line: "/approve session", id: Approve, name: "/approve", arg: "session"},
		// offered elsewhere, or nowhere: Unknown, with the name as typed
		{s: Gateway, line: "/save 2", id: Unknown, name: "/save", arg: "2"},
		{s: Gateway, line: "/quit", id: Unknown, name: "/quit"},
		{s: Plain, line: "/approve", id: Unknown, name: "/approve"},
		{s: Screen, line: "/Bogus x", id: Unknown, name: "/bogus", arg: "x"},
		// messages
		{s: Screen, line: "/etc/hosts is empty", notAtAll: true},
		{s: Gateway, line: "/", notAtAll: true},
		{s: Plain, line: "hello /new", notAtAll: true},
		{s: Plain, line: "", notAtAll: true},
		{s: Gateway, line: "/@bot", notAtAll: true},
	} {
		cmd, arg, ok := tc.s.Parse(tc.line)
		if tc.notAtAll {
			if ok || cmd != nil {
				t.Errorf("%s: Parse(%q) = %+v, %v: want not a command", tc.s, tc.line, cmd, ok)
			}
			continue
		}
		if !ok || cmd == nil || cmd.ID != tc.id || cmd.Name != tc.name || arg != tc.arg {
			t.Errorf("%s: Parse(%q) = %+v, %q, %v: want %d %s %q", tc.s, tc.line, cmd, arg, ok, tc.id, tc.name, tc.arg)
		}
	}
}

func TestParseTakesGatewaysCompressWithoutForce(t *testing.T) {
	if c, _, _ := Gateway.Parse("/compress"); c.Args != "" {
		t.Errorf("the gateway's /compress reads %q", c.Synopsis())
	}
	if c, _, _ := Plain.Parse("/compress"); c.Args != "[--force]" {
		t.Errorf("plain chat's /compress reads %q", c.Synopsis())
	}
}

func TestUnknown(t *testing.T) {
	for _, tc := range []struct {
		s    Surface
		name string
		want string
	}{
		{Screen, "/hepl", "unknown command /hepl: did you mean /help? /help lists the commands"},
		{Plain, "/comp", "unknown command /comp: did you mean /compress? /help lists the commands"},
		{Gateway, "/stpo", "unknown command /stpo: did you mean /stop? /help lists the commands"},
		{Gateway, "/rest", "unknown command /rest: did you mean /new? /help lists the commands"}, // /reset, an alias, is nearest
		{Plain, "/bogus", "unknown command /bogus: /help lists the commands"},
		{Plain, "/x", "unknown command /x: /help lists the commands"},
		{Screen, "/x", "unknown command /x: /help lists the commands"}, // not /bg
		{Screen, "/bh", "unknown command /bh: did you mean /background? /help lists the commands"},
		{Gateway, "/history", "/history is not available here, only in the chat screen: /help lists the commands here"},
		{Gateway, "/yolo", "/yolo is not available here, only in the chat screen: /help lists the commands here"},
		{Plain, "/status", "/status is not available here, only in the chat screen and the messaging gateway: /help lists the commands here"},
		{Gateway, "/QUIT", "/quit is not available here, only in the chat screen and plain chat: /help lists the commands here"},
	} {
		if got := tc.s.Unknown(tc.name).Error(); got != tc.want {
			t.Errorf("%s: Unknown(%s) = %q\nwant %q", tc.s, tc.name, got, tc.want)
		}
	}
}

func TestHelpListsExactlyTheSurfacesCommands(t *testing.T) {
	for _, s := range surfaces {
		help := s.Help()
		lines := strings.Split(help, "\n")
		cs := s.Commands()
		if len(lines) != len(cs) {
			t.Errorf("%s: %d help lines for %d commands:\n%s", s, len(lines), len(cs), help)
			continue
		}
		for i, c := range cs {
			if !strings.Contains(lines[i], c.Synopsis()) || !strings.Contains(lines[i], c.Help) {
				t.Errorf("%s: line %q does not show %s", s, lines[i], c.Synopsis())
			}
			for _, a := range c.Aliases {
				if !strings.Contains(lines[i], a) {
					t.Errorf("%s: line %q does not show the alias %s", s, lines[i], a)
				}
			}
		}
		for _, c := range All() {
			if c.On&s == 0 {
				if _, ok := s.Lookup(c.Name); !ok && containsWord(help, c.Name) {
					t.Errorf("%s: help lists %s, which it does not offer", s, c.Name)
				}
			}
		}
	}
	if got := Gateway.Help(); !strings.Contains(got, "/new — start a new conversation (also /reset)") {
		t.Errorf("gateway help:\n%s", got)
	}
	if got := Screen.Help(); !strings.Contains(got, "\n  /undo [N]     ") {
		t.Errorf("screen help is not in columns:\n%s", got)
	}
}

// containsWord reports whether name appears in text as a whole word.
func containsWord(text, name string) bool {
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == '\n' || r == ',' || r == '(' || r == ')' }) {
		if f == name {
			return true
		}
	}
	return false
}

func TestBrief(t *testing.T) {
	want := "/help  /new [TITLE]  /clear  /sessions [N]  /resume ID  /undo [N]  /retry  /usage  /plugins  /model [NAME] [--global]  /personality [NAME]  /config  /verbose [MODE]  /compress [--force]  /stop  /copy [N]  /insights [DAYS]  /memory [pending|approve|reject|approval]  /bundles  /version  /profile  /exit"
	if got := Plain.Brief(); got != want {
		t.Errorf("Plain.Brief() = %q, want %q", got, want)
	}
}

func TestUnknownOfANameTheSurfaceHasIsNotElsewhere(t *testing.T) {
	// /compress is two entries: Screen|Plain, and Gateway on its own.
	if e := Gateway.Unknown("/compress"); e.Elsewhere != 0 {
		t.Errorf("Gateway.Unknown(/compress) points elsewhere: %v", e)
	}
}

// Hermes' names for commands are aliases here, on every surface that
// offers the command.
func TestHermesAliases(t *testing.T) {
	for _, c := range []struct {
		s     Surface
		typed string
		id    ID
	}{
		{Screen, "/compact", Compress}, {Plain, "/compact", Compress}, {Gateway, "/compact", Compress},
		{Screen, "/fork", Branch}, {Screen, "/q", Queue}, {Screen, "/btw", Background},
		{Gateway, "/commands", Help}, {Plain, "/commands", Help}, {Screen, "/reset", New},
		{Gateway, "/fork", Branch}, {Gateway, "/q", Queue}, {Gateway, "/bg", Background}, {Gateway, "/btw", Background},
		{Gateway, "/sessions", Sessions}, {Gateway, "/resume", Resume}, {Gateway, "/verbose", Verbose}, {Gateway, "/reasoning", Reasoning},
	} {
		if cmd, _, ok := c.s.Parse(c.typed + " x"); !ok || cmd.ID != c.id {
			t.Errorf("%s: %s is %+v", c.s, c.typed, cmd)
		}
	}
	// A command a surface does not offer says where it is.
	for _, c := range []struct {
		s     Surface
		typed string
		want  string
	}{
		{Gateway, "/copy", "only in the chat screen and plain chat"},
		{Gateway, "/clear", "only in the chat screen and plain chat"},
		{Plain, "/redraw", "only in the chat screen"},
		{Gateway, "/config", "only in the chat screen and plain chat"},
	} {
		if got := c.s.Unknown(c.typed).Error(); !strings.Contains(got, c.want) {
			t.Errorf("%s: %s: %q", c.s, c.typed, got)
		}
	}
}

// TestRespell: the commands a text names with their slash are written with
// the platform's prefix; paths, words with a slash and names that are no
// command stay as they are.
func TestRespell(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/help lists the commands", "!help lists the commands"},
		{"unknown command /stpo: did you mean /stop? /help lists the commands", "unknown command /stpo: did you mean !stop? !help lists the commands"},
		{"A task is running: /stop it first.", "A task is running: !stop it first."},
		{"(/resume 1a2b3c4d goes back)", "(!resume 1a2b3c4d goes back)"},
		{"/new — start a new conversation (also /reset)", "!new — start a new conversation (also !reset)"},
		{"14 skills (/NAME loads one)", "14 skills (!NAME loads one)"},
		{"see /etc/hosts and /new/x and and/or, /usr", "see /etc/hosts and /new/x and and/or, /usr"},
		{"/yolo is screen only", "/yolo is screen only"}, // not a command of the gateway
		{"no slash at all", "no slash at all"},
		{"/", "/"},
	} {
		if got := Gateway.Respell(c.in, "!"); got != c.want {
			t.Errorf("Respell(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := Gateway.Respell("/help", "/"); got != "/help" {
		t.Errorf("Respell with a slash changed %q", got)
	}
}

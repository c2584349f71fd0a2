// Package command owns Hermes' in-chat slash commands: one table that says
// which commands there are, their aliases, arguments and one-line help, and
// on which surfaces (the chat screen, plain chat, the messaging gateway)
// each is offered. Each surface parses what the person typed with it,
// switches on the command's ID to run its own handler, and generates its
// /help from it, so the three cannot drift apart.
package command

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hermes-go/hermes/internal/typo"
)

// Surface is a place people type slash commands; a set of them is their
// bitwise or.
type Surface uint8

const (
	// Screen is the interactive chat screen on a terminal.
	Screen Surface = 1 << iota
	// Plain is plain chat: lines read from a pipe or a dumb terminal.
	Plain
	// Gateway is a chat on a messaging platform, through the gateway.
	Gateway
)

// String names the surface as help and errors say it.
func (s Surface) String() string {
	var names []string
	for _, x := range []struct {
		s    Surface
		name string
	}{{Screen, "the chat screen"}, {Plain, "plain chat"}, {Gateway, "the messaging gateway"}} {
		if s&x.s != 0 {
			names = append(names, x.name)
		}
	}
	if len(names) == 0 {
		return "nowhere"
	}
	if len(names) > 1 {
		return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	}
	return names[0]
}

// ID says which command a Command is: surfaces switch on it.
type ID int

// The commands. Unknown is a slash command the surface does not offer.
const (
	Unknown ID = iota
	Help
	New
	Resume
	Undo
	Retry
	Branch
	Title
	History
	Save
	Status
	Usage
	Tools
	Skills
	Model
	Yolo
	Reasoning
	Queue
	Background
	Steer
	Compress
	Stop
	Approve
	Deny
	Exit
	Clear
	Sessions
	Config
	Copy
	Personality
	Verbose
	Insights
	Version
	Profile
	Redraw
	Plugins
	Memory
	Bundles
	SetHome
)

// Command is one slash command.
type Command struct {
	ID ID
	// Name is what it is typed as, with its slash: "/new".
	Name string
	// Aliases are other names for it ("/reset" for "/new"), offered
	// wherever it is.
	Aliases []string
	// Args is how its arguments read in help: "[N]", "ID".
	Args string
	// Help says in one line what it does.
	Help string
	// On are the surfaces that offer it.
	On Surface
	// Words complete its first argument on the chat screen.
	Words []string
}

// Synopsis is the command as help shows it: its name and arguments.
func (c *Command) Synopsis() string {
	return strings.TrimSpace(c.Name + " " + c.Args)
}

// table is every command, in the order help lists them. A name is on one
// entry per surface. It is never changed: All and Commands hand out
// copies.
var table = []Command{
	{ID: Help, Name: "/help", Aliases: []string{"/start", "/commands"}, Help: "list the commands", On: Screen | Plain | Gateway},
	{ID: New, Name: "/new", Aliases: []string{"/reset"}, Help: "start a new conversation", On: Gateway},
	// On a terminal /new takes a title, as Hermes' does.
	{ID: New, Name: "/new", Aliases: []string{"/reset"}, Args: "[TITLE]", Help: "start a new conversation (titled TITLE)", On: Screen | Plain},
	{ID: Clear, Name: "/clear", Help: "clear the screen and start a new conversation (the old one stays: /sessions)", On: Screen | Plain},
	{ID: Sessions, Name: "/sessions", Args: "[N]", Help: "list the recent conversations, numbered; /sessions N continues number N", On: Screen | Plain | Gateway},
	{ID: Resume, Name: "/resume", Args: "ID", Help: "continue session ID (or a unique prefix)", On: Screen | Plain},
	// A chat resumes only its own conversations, by their number too.
	{ID: Resume, Name: "/resume", Args: "N|ID", Help: "continue one of this chat's conversations: number N of /sessions, or its id (or a unique prefix)", On: Gateway},
	{ID: Undo, Name: "/undo", Args: "[N]", Help: "take back the last N turns (1): the chat goes on in a fork made before them; the message comes back to edit", On: Screen | Plain | Gateway},
	{ID: Retry, Name: "/retry", Help: "take back the last turn and send its message again", On: Screen | Plain | Gateway},
	{ID: Branch, Name: "/branch", Aliases: []string{"/fork"}, Args: "[TITLE]", Help: "fork the session here and go on in the fork (the original stays)", On: Screen | Gateway},
	{ID: Title, Name: "/title", Args: "[TEXT]", Help: "show or set the session's title", On: Screen | Gateway},
	{ID: History, Name: "/history", Help: "show the conversation so far", On: Screen},
	{ID: Save, Name: "/save", Args: "[FILE]", Help: "export the session's events as JSON lines (hermes sessions import reads them)", On: Screen},
	{ID: Status, Name: "/status", Help: "the session, model, usage and what is running", On: Screen | Gateway},
	{ID: Usage, Name: "/usage", Help: "tokens and cost of the conversation", On: Screen | Plain | Gateway},
	{ID: Tools, Name: "/tools", Help: "the tools the agent has", On: Screen | Gateway},
	{ID: Skills, Name: "/skills", Help: "the skills it can load", On: Screen | Gateway},
	{ID: Plugins, Name: "/plugins", Help: "the plugins running: their state, tools, hooks and commands, and what went wrong", On: Screen | Plain},
	{ID: Model, Name: "/model", Args: "[NAME]", Help: "show or change the model (from the next turn)", On: Gateway},
	// On a terminal /model can save the model too, as Hermes' --global.
	{ID: Model, Name: "/model", Args: "[NAME] [--global]", Help: "show or change the model (from the next turn; --global: in config.yaml too); alone, the models configured", On: Screen | Plain, Words: []string{"--global"}},
	{ID: Personality, Name: "/personality", Args: "[NAME]", Help: "list the personalities (agent.personalities in config.yaml) or take one on for this chat (none: back to none)", On: Screen | Plain | Gateway},
	{ID: Config, Name: "/config", Help: "the configuration in effect (secrets masked)", On: Screen | Plain},
	{ID: Verbose, Name: "/verbose", Args: "[MODE]", Help: "how tool calls show: off, new (when the tool changes), all, verbose (arguments and results); alone, the next", On: Screen | Plain | Gateway, Words: []string{"all", "new", "off", "verbose"}},
	{ID: Yolo, Name: "/yolo", Help: "approve dangerous commands without asking (again: ask)", On: Screen},
	{ID: Reasoning, Name: "/reasoning", Args: "[show|hide]", Help: "show or hide the model's thinking", On: Screen | Gateway, Words: []string{"hide", "show"}},
	{ID: Queue, Name: "/queue", Aliases: []string{"/q"}, Args: "TEXT", Help: "send TEXT after the current turn, without interrupting it", On: Screen | Gateway},
	{ID: Steer, Name: "/steer", Args: "TEXT", Help: "guide the running task without interrupting it: the agent reads TEXT before its next step (with nothing running, TEXT is sent as a message)", On: Gateway},
	{ID: Background, Name: "/background", Aliases: []string{"/bg", "/btw"}, Args: "TEXT", Help: "run TEXT as a separate session in the background; its answer shows here when it ends", On: Screen | Gateway},
	{ID: Compress, Name: "/compress", Aliases: []string{"/compact"}, Args: "[--force]", Help: "compress the conversation now (--force: even a short one)", On: Screen | Plain, Words: []string{"--force"}},
	// The gateway's compression takes no --force, so its /compress is a
	// second entry, offered only there.
	{ID: Compress, Name: "/compress", Aliases: []string{"/compact"}, Help: "summarise the conversation so far to free context", On: Gateway},
	{ID: Stop, Name: "/stop", Help: "stop the turn in flight", On: Screen | Plain | Gateway},
	{ID: Approve, Name: "/approve", Args: "[session|always]", Help: "allow what the waiting approval question asks: once, for the session, or always", On: Gateway},
	{ID: Deny, Name: "/deny", Help: "refuse what the waiting approval question asks", On: Gateway},
	{ID: Copy, Name: "/copy", Args: "[N]", Help: "copy the last answer (the N-th last) to the clipboard, through the terminal (OSC 52)", On: Screen | Plain},
	{ID: Insights, Name: "/insights", Args: "[DAYS]", Help: "what the agent learned and did in the last DAYS days (30): skills written and used, memories, tools, cost", On: Screen | Plain | Gateway},
	{ID: Memory, Name: "/memory", Args: "[pending|approve|reject|approval]", Help: "what the agent remembers and the changes waiting for your approval (memory.write_approval); approve or reject them (ID or all)", On: Screen | Plain | Gateway,
		Words: []string{"approval", "approve", "pending", "reject"}},
	{ID: Bundles, Name: "/bundles", Help: "the skill bundles ($HERMES_HOME/skill-bundles): /NAME loads a bundle's skills together", On: Screen | Plain | Gateway},
	{ID: SetHome, Name: "/sethome", Help: "make this chat the platform's home channel: scheduled jobs delivering to the platform without naming a chat come here", On: Gateway},
	{ID: Version, Name: "/version", Help: "the version and commit of this hermes", On: Screen | Plain | Gateway},
	{ID: Profile, Name: "/profile", Help: "the Hermes home this chat runs in (its config, sessions and memories)", On: Screen | Plain},
	{ID: Redraw, Name: "/redraw", Help: "draw the screen again (after the terminal was garbled)", On: Screen},
	{ID: Exit, Name: "/exit", Aliases: []string{"/quit"}, Help: "leave (Ctrl-D)", On: Screen | Plain},
}

// All is every command of every surface, in the order help lists them.
func All() []Command {
	return clone(table, func(Command) bool { return true })
}

// Commands are the commands s offers, in the order help lists them.
func (s Surface) Commands() []Command {
	return clone(table, func(c Command) bool { return c.On&s != 0 })
}

func clone(cs []Command, keep func(Command) bool) []Command {
	var out []Command
	for _, c := range cs {
		if keep(c) {
			c.Aliases = append([]string(nil), c.Aliases...)
			c.Words = append([]string(nil), c.Words...)
			out = append(out, c)
		}
	}
	return out
}

// Lookup finds the command s offers under name or one of its aliases
// (with its slash, any case).
func (s Surface) Lookup(name string) (*Command, bool) {
	name = strings.ToLower(name)
	for _, c := range s.Commands() {
		if c.Name == name {
			return &c, true
		}
		for _, a := range c.Aliases {
			if a == name {
				return &c, true
			}
		}
	}
	return nil, false
}

// Parse reads line as a slash command typed on s. ok is false when line is
// not one: it does not start with a slash, or its first word holds another
// slash, as a path does ("/etc/hosts is empty"), so it is a message. When
// ok, arg is the rest of the line, trimmed, and cmd is the command s offers
// under that name or alias; one s does not offer comes back with ID
// Unknown and Name as typed, for Unknown to explain. Names are read in any
// case (phones capitalise), and without the bot a group chat addresses
// ("/new@hermes_bot").
func (s Surface) Parse(line string) (cmd *Command, arg string, ok bool) {
	line = strings.TrimSpace(line)
	head := line
	if i := strings.IndexFunc(line, isSpace); i >= 0 {
		head, arg = line[:i], strings.TrimSpace(line[i:])
	}
	name, _, _ := strings.Cut(head, "@")
	name = strings.ToLower(name)
	if len(name) < 2 || name[0] != '/' || strings.Contains(name[1:], "/") {
		return nil, "", false
	}
	if c, found := s.Lookup(name); found {
		return c, arg, true
	}
	return &Command{ID: Unknown, Name: name}, arg, true
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }

// UnknownError is a slash command the surface does not offer.
type UnknownError struct {
	// Name is the command as typed.
	Name string
	// Suggestion is a command of the surface close to Name, if any.
	Suggestion string
	// Elsewhere are the surfaces that offer Name, if any do.
	Elsewhere Surface
}

// Error says what was typed and where to look.
func (e *UnknownError) Error() string {
	switch {
	case e.Elsewhere != 0:
		return fmt.Sprintf("%s is not available here, only in %s: /help lists the commands here", e.Name, e.Elsewhere)
	case e.Suggestion != "":
		return fmt.Sprintf("unknown command %s: did you mean %s? /help lists the commands", e.Name, e.Suggestion)
	}
	return fmt.Sprintf("unknown command %s: /help lists the commands", e.Name)
}

// Unknown explains that s has no command name: another surface may have
// it, or a command of s may be what was meant.
func (s Surface) Unknown(name string) *UnknownError {
	name = strings.ToLower(name)
	e := &UnknownError{Name: name}
	if _, ok := s.Lookup(name); !ok {
		for _, c := range table {
			if c.On&s == 0 && (c.Name == name || slices.Contains(c.Aliases, name)) {
				e.Elsewhere |= c.On
			}
		}
	}
	if e.Elsewhere != 0 {
		return e
	}
	// A suggestion is at most two edits away, one for a name of two
	// letters, none for one of a letter ("/x" means nothing).
	if len(name) <= 2 {
		return e
	}
	best := 3
	if len(name) <= 3 {
		best = 2
	}
	for _, c := range s.Commands() {
		for _, n := range append([]string{c.Name}, c.Aliases...) {
			d := typo.Distance(name, n)
			if len(name) > 2 && strings.HasPrefix(n, name) {
				d = 1 // "/comp": a prefix of one name
			}
			if d < best {
				best, e.Suggestion = d, c.Name
			}
		}
	}
	return e
}

// Brief is the commands s offers on one line, as a greeting shows them:
// "/help  /new  /resume ID  …".
func (s Surface) Brief() string {
	var names []string
	for _, c := range s.Commands() {
		names = append(names, c.Synopsis())
	}
	return strings.Join(names, "  ")
}

// Help lists the commands s offers, one a line, with their arguments,
// what they do and their aliases: aligned columns on a terminal, "name —
// help" lines in a messaging app (whose fonts do not align).
func (s Surface) Help() string {
	cs := s.Commands()
	w := 0
	for _, c := range cs {
		w = max(w, len(c.Synopsis()))
	}
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteByte('\n')
		}
		help := c.Help
		if len(c.Aliases) > 0 {
			help += " (also " + strings.Join(c.Aliases, ", ") + ")"
		}
		if s == Gateway {
			fmt.Fprintf(&b, "%s — %s", c.Synopsis(), help)
		} else {
			fmt.Fprintf(&b, "  %-*s  %s", w, c.Synopsis(), help)
		}
	}
	return b.String()
}

// Respell writes the commands s offers where text names them with their
// slash ("/new", "/resume ID") with prefix instead, as a platform whose
// clients keep "/…" for themselves has them typed: "!new" on IRC. A
// placeholder in capitals ("/NAME", a skill's name) is respelt too. A
// slash inside a word or a path ("and/or", "/new/x", "/etc") is left
// alone.
func (s Surface) Respell(text, prefix string) string {
	if prefix == "/" || !strings.Contains(text, "/") {
		return text
	}
	var b strings.Builder
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], '/')
		if j < 0 {
			b.WriteString(text[i:])
			break
		}
		j += i
		b.WriteString(text[i:j])
		k := j + 1
		for k < len(text) && isNameByte(text[k]) {
			k++
		}
		name := text[j:k]
		starts := j == 0 || strings.IndexByte(" \t\n(\"'`«“", text[j-1]) >= 0
		ends := k == len(text) || text[k] != '/'
		if _, ok := s.Lookup(name); ok && starts && ends || starts && ends && isPlaceholder(name[1:]) {
			b.WriteString(prefix + name[1:])
		} else {
			b.WriteString(name)
		}
		i = k
	}
	return b.String()
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// isPlaceholder reports whether name is a placeholder help writes in
// capitals ("NAME").
func isPlaceholder(name string) bool {
	return len(name) > 1 && strings.ToUpper(name) == name && strings.IndexFunc(name, func(r rune) bool { return r < 'A' || r > 'Z' }) < 0
}

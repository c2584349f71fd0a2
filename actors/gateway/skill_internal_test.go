package gateway

import "testing"

// TestSkillCommand: a slash command the gateway does not have is a skill
// command; on IRC, !name is too (its clients keep the slash), and a
// gateway command typed either way is not.
func TestSkillCommand(t *testing.T) {
	for _, c := range []struct {
		platform, text, name, arg string
		ok                        bool
	}{
		{"telegram", "/deploy-check the api", "deploy-check", "the api", true},
		{"telegram", "/Deploy-Check@hermes_bot", "deploy-check", "", true},
		{"telegram", "/stop", "", "", false},
		{"telegram", "/clear", "", "", false},
		{"telegram", "!deploy-check", "", "", false},
		{"telegram", "/etc/hosts is empty", "", "", false},
		{"irc", "!deploy-check now", "deploy-check", "now", true},
		{"irc", "!stop", "", "", false},
		{"irc", "hello", "", "", false},
	} {
		name, arg, ok := skillCommand(c.platform, c.text)
		if name != c.name || arg != c.arg || ok != c.ok {
			t.Errorf("skillCommand(%q, %q) = %q %q %v", c.platform, c.text, name, arg, ok)
		}
	}
}

package config

import (
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/gateway"
)

// display: and streaming: in upstream's spelling give each platform its
// streaming and tool-progress mode: a platform's own setting over the
// older overrides, over display.tool_progress, over upstream's platform
// defaults; streaming follows streaming.enabled unless the platform says.
func TestDisplaySettings(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		want       map[string]gateway.Display
		every      time.Duration
	}{
		{"defaults", "model: m\n", map[string]gateway.Display{
			"telegram": {ToolProgress: "off"}, "slack": {ToolProgress: "off"}, "matrix": {ToolProgress: "new"},
			"irc": {ToolProgress: "all"}, "email": {ToolProgress: "off"}}, time.Second},
		{"global mode, streaming on", "model: m\ndisplay:\n  tool_progress: verbose\n  tool_preview_length: 60\n  skin: mono\nstreaming:\n  enabled: true\n  edit_interval: 0.5\n",
			map[string]gateway.Display{
				"telegram": {Streaming: true, ToolProgress: "verbose", PreviewLength: 60},
				"matrix":   {Streaming: true, ToolProgress: "verbose", PreviewLength: 60}}, 500 * time.Millisecond},
		{"per platform", "model: m\ndisplay:\n  tool_progress: false\n  tool_progress_overrides:\n    slack: new\n  platforms:\n    telegram:\n      streaming: true\n      tool_progress: all\n      runtime_footer: {enabled: true}\n    matrix:\n      streaming: false\n      tool_preview_length: 20\nstreaming:\n  enabled: true\n  transport: edit\n",
			map[string]gateway.Display{
				"telegram": {Streaming: true, ToolProgress: "all"},
				"slack":    {Streaming: true, ToolProgress: "new"},
				"matrix":   {ToolProgress: "off", PreviewLength: 20}}, time.Second},
		{"transport off", "model: m\ndisplay:\n  platforms:\n    slack:\n      streaming: true\nstreaming:\n  enabled: true\n  transport: off\n",
			map[string]gateway.Display{"telegram": {ToolProgress: "off"}, "slack": {Streaming: true, ToolProgress: "off"}}, time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			clean(t)
			cfg, err := Load(homeWith(t, c.yaml))
			if err != nil {
				t.Fatal(err)
			}
			set, err := Gateway(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for p, want := range c.want {
				if got := set.Displays[p]; got != want {
					t.Errorf("%s: %+v, want %+v", p, got, want)
				}
			}
			if set.EditEvery != c.every {
				t.Errorf("edit every %s, want %s", set.EditEvery, c.every)
			}
		})
	}
}

// A value the gateway cannot use is refused naming its key.
func TestDisplayErrors(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"display:\n  tool_progress: loud\n", "display.tool_progress loud"},
		{"display:\n  platforms:\n    telegram:\n      tool_progress: 3\n", "display.platforms.telegram.tool_progress 3"},
		{"display:\n  platforms:\n    slack:\n      streaming: maybe\n", "display.platforms.slack.streaming maybe"},
		{"display:\n  tool_preview_length: -1\n", "display.tool_preview_length -1"},
		{"streaming:\n  edit_interval: -2\n", "streaming.edit_interval -2"},
		{"streaming:\n  transport: carrier-pigeon\n", `streaming.transport "carrier-pigeon"`},
	} {
		clean(t)
		cfg, err := Load(homeWith(t, "model: m\n"+c.yaml))
		if err == nil {
			_, err = Gateway(cfg)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.yaml, err, c.want)
		}
	}
}

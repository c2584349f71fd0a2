package config

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-go/hermes/actors/gateway"
	gw "github.com/hermes-go/hermes/adapters/gateway"
)

// DisplayConfig holds the keys of upstream's display: section the gateway
// uses: how a chat sees a turn while it runs. The section's other keys
// (skin, compact, ...) are the Python agent's CLI's: ignored here.
type DisplayConfig struct {
	// ToolProgress is a line per tool call in the chat: off, new (when
	// the tool changes), all, verbose (the arguments whole); true is all,
	// false off; log (upstream's tool-call log file) is off here.
	ToolProgress any `yaml:"tool_progress"`
	// ToolPreviewLength cuts the argument a progress line shows (0: 40
	// characters; verbose lines are cut only when it is set).
	ToolPreviewLength *int `yaml:"tool_preview_length"`
	// ToolProgressOverrides is upstream's older spelling of
	// platforms.<platform>.tool_progress.
	ToolProgressOverrides map[string]any `yaml:"tool_progress_overrides"`
	// Platforms overrides the settings by platform:
	// platforms.<platform>.{streaming, tool_progress, tool_preview_length}
	// (other keys there are upstream's, ignored).
	Platforms map[string]map[string]any `yaml:"platforms"`
}

// StreamingConfig is upstream's streaming: section: the gateway shows an
// answer as it is written by editing one message, where the platform can
// edit (Telegram, Slack, Matrix).
type StreamingConfig struct {
	// Enabled streams on every platform that can edit, unless
	// display.platforms.<platform>.streaming says otherwise (default off).
	Enabled *bool `yaml:"enabled"`
	// Transport off turns streaming off as enabled: false does (upstream's
	// auto, draft and edit all edit here).
	Transport string `yaml:"transport"`
	// EditInterval is the least time between two edits in a chat, in
	// seconds (default 1: Telegram takes about one message a second in a
	// chat).
	EditInterval float64 `yaml:"edit_interval"`
}

// displayPlatforms are the platforms whose display settings are resolved:
// the gateway's.
var displayPlatforms = []string{"telegram", "slack", "matrix", "irc", "xmpp", "email", "webhook"}

// toolProgressDefaults are upstream's defaults by platform (its
// display_config.py): quiet where a line would be a message of its own or
// the chat is a phone's inbox, a line per new tool on Matrix; all
// elsewhere.
var toolProgressDefaults = map[string]string{
	"telegram": gateway.ProgressOff, "slack": gateway.ProgressOff, "matrix": gateway.ProgressNew,
	"email": gateway.ProgressOff, "webhook": gateway.ProgressOff,
}

// resolveDisplay works out each platform's gateway.Display from display:
// and streaming:, and the least time between edits.
func resolveDisplay(d DisplayConfig, s StreamingConfig) (map[string]gateway.Display, time.Duration, error) {
	every := gw.DefaultEditEvery
	if s.EditInterval < 0 || math.IsNaN(s.EditInterval) || math.IsInf(s.EditInterval, 0) {
		return nil, 0, fmt.Errorf("streaming.edit_interval %v: use a number of seconds such as 1", s.EditInterval)
	}
	if s.EditInterval > 0 {
		every = time.Duration(s.EditInterval * float64(time.Second))
	}
	switch strings.ToLower(s.Transport) {
	case "", "auto", "draft", "edit", "off":
	default:
		return nil, 0, fmt.Errorf("streaming.transport %q: use auto, edit or off", s.Transport)
	}
	streaming := s.Enabled != nil && *s.Enabled && !strings.EqualFold(s.Transport, "off")
	global, err := progressMode(d.ToolProgress, "display.tool_progress")
	if err != nil {
		return nil, 0, err
	}
	names := append([]string(nil), displayPlatforms...)
	for p := range d.Platforms {
		if !slices.Contains(names, p) {
			names = append(names, p)
		}
	}
	sort.Strings(names)
	out := map[string]gateway.Display{}
	for _, p := range names {
		over := d.Platforms[p]
		disp := gateway.Display{Streaming: streaming, ToolProgress: gateway.ProgressAll}
		if v, ok := over["streaming"]; ok && v != nil {
			b, err := flag(v, "display.platforms."+p+".streaming")
			if err != nil {
				return nil, 0, err
			}
			disp.Streaming = b
		}
		mode := ""
		if v, ok := over["tool_progress"]; ok && v != nil {
			if mode, err = progressMode(v, "display.platforms."+p+".tool_progress"); err != nil {
				return nil, 0, err
			}
		} else if v, ok := d.ToolProgressOverrides[p]; ok && v != nil {
			if mode, err = progressMode(v, "display.tool_progress_overrides."+p); err != nil {
				return nil, 0, err
			}
		}
		switch {
		case mode != "":
		case global != "":
			mode = global
		case toolProgressDefaults[p] != "":
			mode = toolProgressDefaults[p]
		default:
			mode = gateway.ProgressAll
		}
		disp.ToolProgress = mode
		if d.ToolPreviewLength != nil {
			disp.PreviewLength = *d.ToolPreviewLength
		}
		if v, ok := over["tool_preview_length"]; ok && v != nil {
			n, err := count(v, "display.platforms."+p+".tool_preview_length")
			if err != nil {
				return nil, 0, err
			}
			disp.PreviewLength = n
		}
		if disp.PreviewLength < 0 {
			return nil, 0, fmt.Errorf("display.tool_preview_length %d: use 0 or more characters", disp.PreviewLength)
		}
		out[p] = disp
	}
	return out, every, nil
}

// progressMode reads a tool_progress value ("": not set).
func progressMode(v any, key string) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case bool:
		if x {
			return gateway.ProgressAll, nil
		}
		return gateway.ProgressOff, nil
	case string:
		switch s := strings.ToLower(strings.TrimSpace(x)); s {
		case gateway.ProgressOff, gateway.ProgressNew, gateway.ProgressAll, gateway.ProgressVerbose:
			return s, nil
		case "log", "false", "no", "0":
			return gateway.ProgressOff, nil
		case "true", "yes", "on", "1":
			return gateway.ProgressAll, nil
		}
	}
	return "", fmt.Errorf("%s %v: use off, new, all or verbose", key, v)
}

// flag reads a yes/no value.
func flag(v any, key string) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true", "yes", "on", "1":
			return true, nil
		case "false", "no", "off", "0":
			return false, nil
		}
	}
	return false, fmt.Errorf("%s %v: use true or false", key, v)
}

// count reads a whole number.
func count(v any, key string) (int, error) {
	switch x := v.(type) {
	case int:
		return x, nil
	case string:
		if n, err := strconv.Atoi(strings.TrimSpace(x)); err == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("%s %v: use a number of characters", key, v)
}

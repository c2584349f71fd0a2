package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/adapters/sandbox"
)

// These tests run in-process, in milliseconds: which of a flag, the
// environment, config.yaml and the default wins, and what a bad file or
// value says. cmd/hermes's black-box tests check the same through the
// binary.

// clean empties the variables these tests set, so that the machine's
// environment does not decide them.
func clean(t *testing.T) {
	t.Helper()
	for _, k := range []string{"HERMES_HOME", "HERMES_MODEL", "HERMES_STORE", "HERMES_SANDBOX", "HERMES_BACKOFF_BASE", "HERMES_FIRST_BYTE_TIMEOUT",
		"OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"} {
		t.Setenv(k, "")
	}
}

// homeWith is a temporary home whose config.yaml is yaml ("": none).
func homeWith(t *testing.T, yaml string) string {
	t.Helper()
	home := t.TempDir()
	if yaml != "" {
		if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// resolveIn loads home's config.yaml and resolves it with o.
func resolveIn(t *testing.T, home string, o Overrides) (Resolved, error) {
	t.Helper()
	c, err := Load(home)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return Resolve(home, c, o)
}

func TestModelPrecedence(t *testing.T) {
	for _, c := range []struct {
		name, file, env, flag, want string
	}{
		{"flag over env and file", "model: file-m\n", "env-m", "flag-m", "flag-m"},
		{"env over file", "model: file-m\n", "env-m", "", "env-m"},
		{"file", "model: file-m\n", "", "", "file-m"},
		{"file, mapping form", "model:\n  default: map-m\n", "", "", "map-m"},
		{"flag alone", "", "", "flag-m", "flag-m"},
	} {
		t.Run(c.name, func(t *testing.T) {
			clean(t)
			t.Setenv("HERMES_MODEL", c.env)
			r, err := resolveIn(t, homeWith(t, c.file), Overrides{Model: c.flag})
			if err != nil || r.Model != c.want {
				t.Fatalf("model %q (%v), want %q", r.Model, err, c.want)
			}
		})
	}
	clean(t)
	_, err := resolveIn(t, homeWith(t, ""), Overrides{})
	if err == nil || !strings.Contains(err.Error(), "no model configured") || !strings.Contains(err.Error(), "--model") {
		t.Fatalf("no model anywhere: %v", err)
	}
}

func TestMaxTurnsPrecedence(t *testing.T) {
	clean(t)
	for _, c := range []struct {
		name, file string
		flag, want int
	}{
		{"default", "model: m\n", 0, 90},
		{"file", "model: m\nagent:\n  max_turns: 40\n", 0, 40},
		{"flag over file", "model: m\nagent:\n  max_turns: 40\n", 7, 7},
	} {
		r, err := resolveIn(t, homeWith(t, c.file), Overrides{MaxTurns: c.flag})
		if err != nil || r.MaxTurns != c.want {
			t.Errorf("%s: max turns %d (%v), want %d", c.name, r.MaxTurns, err, c.want)
		}
	}
	if _, err := resolveIn(t, homeWith(t, "model: m\n"), Overrides{MaxTurns: -1}); err == nil || !strings.Contains(err.Error(), "--max-turns") {
		t.Fatalf("negative --max-turns: %v", err)
	}
}

func TestSessionsIdleAfter(t *testing.T) {
	clean(t)
	for _, c := range []struct {
		file string
		want time.Duration
	}{
		{"model: m\n", 0},
		{"model: m\nsessions:\n  idle_after: 90s\n", 90 * time.Second},
		{"model: m\nsessions:\n  idle_after: never\n", -1},
	} {
		r, err := resolveIn(t, homeWith(t, c.file), Overrides{})
		if err != nil || r.IdleAfter != c.want {
			t.Errorf("%q: idle after %v (%v), want %v", c.file, r.IdleAfter, err, c.want)
		}
	}
	for _, bad := range []string{"soon", "0s", "-1m"} {
		_, err := resolveIn(t, homeWith(t, "model: m\nsessions:\n  idle_after: "+bad+"\n"), Overrides{})
		if err == nil || !strings.Contains(err.Error(), "sessions.idle_after") {
			t.Errorf("idle_after %s: %v", bad, err)
		}
	}
}

func TestSandboxPrecedence(t *testing.T) {
	for _, c := range []struct {
		name, file, env, flag string
		want                  sandbox.Mode
	}{
		{"default", "model: m\n", "", "", sandbox.WorkspaceWrite},
		{"file", "model: m\nsandbox:\n  mode: read-only\n", "", "", sandbox.ReadOnly},
		{"env over file", "model: m\nsandbox:\n  mode: read-only\n", "full-access", "", sandbox.FullAccess},
		{"flag over env", "model: m\nsandbox:\n  mode: read-only\n", "full-access", "workspace-write", sandbox.WorkspaceWrite},
	} {
		t.Run(c.name, func(t *testing.T) {
			clean(t)
			t.Setenv("HERMES_SANDBOX", c.env)
			r, err := resolveIn(t, homeWith(t, c.file), Overrides{Sandbox: c.flag})
			if err != nil || r.Sandbox.Mode != c.want {
				t.Fatalf("sandbox %s (%v), want %s", r.Sandbox.Mode, err, c.want)
			}
		})
	}
	clean(t)
	t.Setenv("HERMES_SANDBOX", "everything")
	if _, err := resolveIn(t, homeWith(t, "model: m\n"), Overrides{}); err == nil || !strings.Contains(err.Error(), "HERMES_SANDBOX") {
		t.Fatalf("a bad HERMES_SANDBOX: %v", err)
	}
}

func TestStorePrecedence(t *testing.T) {
	const flag, env, file = "postgres://f@db/hermes", "esdb://e:2113", "postgres://file@db/hermes"
	for _, c := range []struct {
		name, file, env, flag string
		want                  StoreSpec
	}{
		{"default", "", "", "", StoreSpec{Kind: StoreEmbedded}},
		{"file", "store: " + file + "\n", "", "", StoreSpec{Kind: StorePostgres, DSN: file}},
		{"env over file", "store: " + file + "\n", env, "", StoreSpec{Kind: StoreESDB, DSN: env}},
		{"flag over env", "store: " + file + "\n", env, flag, StoreSpec{Kind: StorePostgres, DSN: flag}},
		{"flag embedded over file", "store: " + file + "\n", "", "embedded", StoreSpec{Kind: StoreEmbedded}},
		// The rest of a broken file is Load's business.
		{"broken file without store", "model: [\n", "", "", StoreSpec{Kind: StoreEmbedded}},
	} {
		t.Run(c.name, func(t *testing.T) {
			clean(t)
			t.Setenv("HERMES_STORE", c.env)
			got, err := Store(c.flag, homeWith(t, c.file))
			if err != nil || got != c.want {
				t.Fatalf("store %+v (%v), want %+v", got, err, c.want)
			}
		})
	}
	// A bad value names where it came from, and hides a password.
	for _, c := range []struct{ name, file, env, flag, want string }{
		{"flag", "", "", "mysql://u:secret@h/db", "--store: unknown store \"mysql://u:xxxxx@h/db\""},
		{"env", "", "redis://h", "", "HERMES_STORE: unknown store \"redis://h\""},
		{"file", "store: sqlite\n", "", "", "config.yaml: unknown store \"sqlite\""},
		{"file that does not parse", "store: [\n", "", "", "config.yaml"},
	} {
		t.Run("bad "+c.name, func(t *testing.T) {
			clean(t)
			t.Setenv("HERMES_STORE", c.env)
			_, err := Store(c.flag, homeWith(t, c.file))
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "secret") {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

func TestHomePrecedence(t *testing.T) {
	clean(t)
	user := t.TempDir()
	t.Setenv("HOME", user)
	flag, env := filepath.Join(t.TempDir(), "flag"), filepath.Join(t.TempDir(), "env")
	t.Setenv("HERMES_HOME", env)
	if h, err := Home(flag); err != nil || h != flag {
		t.Fatalf("--home gave %q %v", h, err)
	}
	if h, err := Home(""); err != nil || h != env {
		t.Fatalf("HERMES_HOME gave %q %v", h, err)
	}
	t.Setenv("HERMES_HOME", "")
	if h, err := Home(""); err != nil || h != filepath.Join(user, ".hermes") {
		t.Fatalf("the default gave %q %v", h, err)
	}
	if h, err := Home("~/elsewhere"); err != nil || h != filepath.Join(user, "elsewhere") {
		t.Fatalf("~/ gave %q %v", h, err)
	}
	for _, d := range []string{flag, env, filepath.Join(user, ".hermes"), filepath.Join(user, "elsewhere")} {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			t.Fatalf("home %s not created: %v", d, err)
		}
	}
}

// The home's .env fills the environment's gaps; the environment wins.
func TestDotEnv(t *testing.T) {
	clean(t)
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ".env"), []byte("# keys\nexport HERMES_MODEL='from-dotenv'\nOPENAI_API_KEY=\"sk-dotenv\"\n\nnot a line\n"), 0o600)
	os.Unsetenv("HERMES_MODEL") // restored by clean's t.Setenv
	t.Setenv("OPENAI_API_KEY", "sk-env")
	if _, err := Home(home); err != nil {
		t.Fatal(err)
	}
	if got := os.Getenv("HERMES_MODEL"); got != "from-dotenv" {
		t.Fatalf("HERMES_MODEL %q, want from-dotenv", got)
	}
	if got := os.Getenv("OPENAI_API_KEY"); got != "sk-env" {
		t.Fatalf("OPENAI_API_KEY %q: .env beat the environment", got)
	}
	if err := SetDotEnv(home, "HERMES_MODEL", "again"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(home, ".env"))
	if !strings.Contains(string(data), "HERMES_MODEL=again\n") || strings.Contains(string(data), "from-dotenv") || !strings.Contains(string(data), "sk-dotenv") {
		t.Fatalf(".env after SetDotEnv:\n%s", data)
	}
}

func TestLogLevel(t *testing.T) {
	if l, err := LogLevel("debug"); err != nil || l != zerolog.DebugLevel {
		t.Fatalf("debug gave %v %v", l, err)
	}
	if _, err := LogLevel("loud"); err == nil || !strings.Contains(err.Error(), `--log-level "loud"`) {
		t.Fatalf("a bad level: %v", err)
	}
}

// A file that does not parse, an unknown key and a value out of range are
// refused naming the file, the key and (for keys) the line.
func TestLoadErrors(t *testing.T) {
	clean(t)
	for _, c := range []struct{ name, yaml, want string }{
		{"not YAML", "model: [unclosed\n", "config.yaml: yaml:"},
		{"wrong type", "agent:\n  max_turns: many\n", "config.yaml: yaml:"},
		{"unknown key", "model: m\nagent:\n  max_turn: 3\n", "line 3: unknown key agent.max_turn: did you mean agent.max_turns?"},
		{"out of range", "agent:\n  max_turns: 0\n", "agent.max_turns must be at least 1, got 0"},
		{"bad store", "store: mysql://x\n", "store: unknown store \"mysql://x\""},
		{"negative price", "prices:\n  m:\n    input: -1\n", "prices.m: prices must not be negative"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(homeWith(t, c.yaml))
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "config.yaml") {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
	c, err := Load(homeWith(t, "model: m\ndisplay:\n  skin: mono\n"))
	if err != nil || !slices.Equal(c.Ignored(), []string{"display.skin"}) {
		t.Fatalf("a section of the Python agent: ignored %v, %v", c.Ignored(), err)
	}
	if c, err := Load(t.TempDir()); err != nil || c.Model.Name != "" {
		t.Fatalf("no config.yaml: %+v %v", c, err)
	}
}

// Values Load accepts but Resolve cannot use are refused naming the key.
func TestResolveErrors(t *testing.T) {
	for _, c := range []struct{ name, yaml, env, want string }{
		{"tool timeout", "model: m\nagent:\n  tool_timeout: soon\n", "", `agent.tool_timeout "soon"`},
		{"model call timeout", "model: m\nagent:\n  model_call_timeout: -1s\n", "", `agent.model_call_timeout "-1s"`},
		{"first byte timeout", "model: m\nagent:\n  first_byte_timeout: soon\n", "", `agent.first_byte_timeout "soon"`},
		{"negative first byte timeout", "model: m\nagent:\n  first_byte_timeout: -5\n", "", `agent.first_byte_timeout "-5"`},
		{"budget warning", "model: m\nagent:\n  budget_warning_at: 2\n", "", "agent.budget_warning_at must be between 0 and 1"},
		{"provider", "model:\n  default: m\n  provider: nosuch\n", "", `model.provider "nosuch" is not a provider`},
		{"backend", "model: m\nterminal:\n  backend: vm\n", "", `terminal.backend "vm"`},
		{"ssh without a host", "model: m\nterminal:\n  backend: ssh\n", "", "terminal.ssh_host is not set"},
		{"terminal timeout", "model: m\nterminal:\n  timeout: -3\n", "", "terminal.timeout must be a positive number"},
		{"fallback without a model", "model: m\nfallback_providers:\n  - provider: openai\n", "", "fallback_providers[0] names no model"},
		{"backoff", "model: m\n", "later", `HERMES_BACKOFF_BASE "later"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			clean(t)
			t.Setenv("HERMES_BACKOFF_BASE", c.env)
			_, err := resolveIn(t, homeWith(t, c.yaml), Overrides{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

// Set changes one key, keeps the rest of the file, and refuses a key or
// value this build would not accept.
func TestSet(t *testing.T) {
	home := homeWith(t, "# mine\nmodel: m\n")
	if err := Set(home, "agent.max_turns", "40"); err != nil {
		t.Fatal(err)
	}
	c, err := Load(home)
	if err != nil || c.Agent.MaxTurns != 40 || c.Model.Name != "m" {
		t.Fatalf("after set: %+v %v", c.Agent, err)
	}
	if data, _ := os.ReadFile(filepath.Join(home, "config.yaml")); !strings.Contains(string(data), "# mine") {
		t.Fatalf("comment lost:\n%s", data)
	}
	for _, b := range []struct{ key, value, want string }{
		{"agent.max_turn", "4", "did you mean agent.max_turns?"},
		{"agent.max_turns", "0", "agent.max_turns must be at least 1"},
		{"agent.max_turns", "many", "not set: agent.max_turns \"many\""},
		{"approvals", "x", "approvals is not a key this build knows"},
		{"model.default.x", "y", "is not a section"},
	} {
		if err := Set(home, b.key, b.value); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("set %s %s: %v, want %q", b.key, b.value, err, b.want)
		}
	}
	if c, _ := Load(home); c.Agent.MaxTurns != 40 {
		t.Fatalf("a refused set changed the file: %+v", c.Agent)
	}
}

func TestNearestKey(t *testing.T) {
	known := []string{"toolsets", "disabled_toolsets", "enabled_tools", "disabled_tools"}
	for _, c := range []struct{ key, want string }{
		{"disabled_tool", "disabled_tools"},
		{"disable_tools", "disabled_tools"},
		{"disabledtoolsets", "disabled_toolsets"},
		{"toolset", "toolsets"},
		{"blocked", ""},
		{"x", ""},
	} {
		if got := nearest(c.key, known); got != c.want {
			t.Errorf("nearest(%q) = %q, want %q", c.key, got, c.want)
		}
	}
}

// The sandbox: section becomes one policy; YAML's on and off stay words.
func TestSandboxConfig(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("sandbox:\n  mode: read-only\n  network: off\n  readable: [~/.ssh]\n  max_processes: 64\n"), 0o600)
	c, err := Load(home)
	if err != nil {
		t.Fatal(err)
	}
	p, err := SandboxPolicy(home, c.Sandbox, "", "config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	userHome, _ := os.UserHomeDir()
	if p.Mode != sandbox.ReadOnly || p.Network != sandbox.NetOff || p.Limits.Procs != 64 {
		t.Fatalf("policy: %+v", p)
	}
	if !slices.Contains(p.Hidden, home) || slices.Contains(p.Hidden, filepath.Join(userHome, ".ssh")) || !slices.Contains(p.Visible, filepath.Join(userHome, ".ssh")) {
		t.Fatalf("hidden %v visible %v", p.Hidden, p.Visible)
	}
	if p, _ := SandboxPolicy(home, c.Sandbox, "full-access", "config.yaml"); p.Mode != sandbox.FullAccess {
		t.Fatalf("--sandbox full-access gave %s", p.Mode)
	}
	t.Setenv("HERMES_SANDBOX", "full-access")
	if r, err := Resolve(home, c, Overrides{Model: "m"}); err != nil || r.Sandbox.Mode != sandbox.FullAccess {
		t.Fatalf("HERMES_SANDBOX=full-access gave %s %v", r.Sandbox.Mode, err)
	}
	if r, err := Resolve(home, c, Overrides{Model: "m", Sandbox: "workspace-write"}); err != nil || r.Sandbox.Mode != sandbox.WorkspaceWrite {
		t.Fatalf("--sandbox over HERMES_SANDBOX gave %s %v", r.Sandbox.Mode, err)
	}
	if _, err := SandboxPolicy(home, c.Sandbox, "everything", "config.yaml"); err == nil || !strings.Contains(err.Error(), "--sandbox") {
		t.Fatalf("a bad --sandbox: %v", err)
	}
	if _, err := SandboxPolicy(home, SandboxConfig{Readable: []string{filepath.Join(home, "keys")}}, "", "config.yaml"); err == nil {
		t.Fatal("a path in Hermes' home was made readable")
	}
}

// agent.first_byte_timeout takes seconds or a duration, 0 for none, and
// HERMES_FIRST_BYTE_TIMEOUT beats it; it reaches the main provider, the
// fallbacks and the auxiliary model.
func TestFirstByteTimeout(t *testing.T) {
	for _, c := range []struct {
		name, yaml, env string
		want            time.Duration
	}{
		{"default", "model: m\n", "", 0},
		{"seconds", "model: m\nagent:\n  first_byte_timeout: 30\n", "", 30 * time.Second},
		{"duration", "model: m\nagent:\n  first_byte_timeout: 2m\n", "", 2 * time.Minute},
		{"off", "model: m\nagent:\n  first_byte_timeout: 0\n", "", -1},
		{"environment", "model: m\nagent:\n  first_byte_timeout: 30\n", "1.5", 1500 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			clean(t)
			t.Setenv("HERMES_FIRST_BYTE_TIMEOUT", c.env)
			yaml := c.yaml + "fallback_providers:\n  - {default: f, provider: openai}\nauxiliary:\n  compression: {default: a}\n"
			r, err := resolveIn(t, homeWith(t, yaml), Overrides{})
			if err != nil {
				t.Fatal(err)
			}
			if r.LLM.FirstByteTimeout != c.want || r.Fallbacks[0].FirstByteTimeout != c.want || r.Aux.FirstByteTimeout != c.want {
				t.Fatalf("first byte timeout %s, fallback %s, aux %s, want %s", r.LLM.FirstByteTimeout, r.Fallbacks[0].FirstByteTimeout, r.Aux.FirstByteTimeout, c.want)
			}
		})
	}
}

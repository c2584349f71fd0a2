package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/tools/memory"
	"github.com/hermes-go/hermes/events/embedded"
)

// The tests of this file check that a home the Python Hermes Agent wrote
// carries over: its own code (hermes-agent 0.19.0, installed with its
// dependencies in the venv HERMES_AGENT_VENV names; .ci/run makes it)
// writes the config, the memories and a skill, this build runs on the
// home, and the Python code reads the home back.

// pythonAgent is the venv holding the Python Hermes Agent.
func pythonAgent(t *testing.T) string {
	t.Helper()
	venv := os.Getenv("HERMES_AGENT_VENV")
	if venv == "" {
		t.Skip("HERMES_AGENT_VENV is not set: .ci/run installs hermes-agent==0.19.0 in .ci/hermes-venv and sets it")
	}
	return venv
}

// pyEnv is the environment the Python agent runs in, on home.
func pyEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Dir(home), "HERMES_HOME=" + home, "NO_COLOR=1"}
}

// python runs testdata/python_agent.py (the Python agent's own code) on
// home and decodes the JSON it prints; it fails the test if the Python
// code refused.
func python(t *testing.T, venv, home, stdin string, args ...string) map[string]any {
	t.Helper()
	script, _ := filepath.Abs(filepath.Join("testdata", "python_agent.py"))
	cmd := exec.Command(filepath.Join(venv, "bin", "python"), append([]string{script}, args...)...)
	cmd.Env = pyEnv(home)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var res map[string]any
	if jerr := json.Unmarshal(out.Bytes(), &res); err != nil || jerr != nil {
		t.Fatalf("python_agent.py %v: %v %v\n%s\n%s", args, err, jerr, out.String(), errb.String())
	}
	return res
}

// pythonHermes runs the Python agent's own hermes command on home.
func pythonHermes(t *testing.T, venv, home string, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(venv, "bin", "hermes"), args...)
	cmd.Env = pyEnv(home)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python hermes %v: %v\n%s", args, err, out)
	}
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPythonHomeCarriesOver: a home the Python agent set up (config.yaml
// with its keys, .env, two MEMORY.md entries and a USER.md from its memory
// tool, a skill in a category directory) works here with nothing lost,
// and the Python agent reads it back after this build changed it.
func TestPythonHomeCarriesOver(t *testing.T) {
	venv := pythonAgent(t)
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "memory", Args: `{"action":"add","target":"memory","content":"Tests need -race"}`}}},
		llmtest.Reply{Content: "Noted."},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "memory", Args: `{"action":"add","target":"memory","content":"Releases are tagged on Fridays"}`}}},
		llmtest.Reply{Content: "Noted again."},
	)
	defer srv.Close()
	home := filepath.Join(t.TempDir(), ".hermes")
	os.MkdirAll(home, 0o700)

	// The Python agent writes the home.
	for _, kv := range [][]string{
		{"model.default", "gpt-4o-mini"}, {"model.provider", "custom"}, {"model.base_url", srv.URL + "/v1"},
		{"model.api_key", "sk-from-python-config"}, {"model.context_length", "64000"},
		{"agent.reasoning_effort", "high"}, {"agent.max_turns", "12"},
		{"compression.summary_model", "cheap-model"}, {"toolsets", "hermes-cli"},
		{"OPENROUTER_API_KEY", "sk-or-from-python-env"},
	} {
		pythonHermes(t, venv, home, "config", "set", kv[0], kv[1])
	}
	python(t, venv, home, "", "memory-add", "memory", "Project uses uv, not pip")
	python(t, venv, home, "", "memory-add", "memory", "Deploys go through\nstaging first")
	python(t, venv, home, "", "memory-add", "user", "Name: Ada")
	python(t, venv, home, "---\nname: deploy_check\ndescription: Check a deploy before it ships\n---\n\nRun the smoke tests.\n", "skill-create", "deploy_check", "devops")
	mem, usr := filepath.Join(home, "memories", "MEMORY.md"), filepath.Join(home, "memories", "USER.md")
	skill := filepath.Join(home, "skills", "devops", "deploy_check", "SKILL.md")
	userBytes, skillBytes := readFile(t, usr), readFile(t, skill)

	// doctor passes, warning once about the keys this build does not use.
	out, errOut, err := run(t, home, "doctor", "--offline")
	if err != nil || !strings.Contains(out, "config.yaml") || !strings.Contains(out, "agent.reasoning_effort") || strings.Contains(out, "compression.summary_model") {
		t.Fatalf("doctor on the Python agent's home: %v\n%s\n%s", err, out, errOut)
	}
	if !strings.Contains(out, "gpt-4o-mini (custom") {
		t.Fatalf("doctor does not see the Python agent's model:\n%s", out)
	}

	// A chat: the memory tool adds to MEMORY.md, keeping Python's entries;
	// the key of the Python agent's model.api_key is the one sent.
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Dir(home)}
	out, errOut, code := hermes(t, env, "", "--home", home, "chat", "-q", "Remember that tests need -race")
	if code != 0 || !strings.Contains(out, "Noted.") {
		t.Fatalf("chat: exit %d\n%s\n%s", code, out, errOut)
	}
	if warn := strings.Count(errOut, "key(s) of the Python Hermes Agent"); warn != 1 || !strings.Contains(errOut, "agent.reasoning_effort") || !strings.Contains(errOut, "toolsets") {
		t.Fatalf("want one warning line naming the ignored keys, stderr:\n%s", errOut)
	}
	req := srv.Requests()[0]
	if auth := req.Header.Get("Authorization"); auth != "Bearer sk-from-python-config" {
		t.Fatalf("Authorization %q: model.api_key not honoured", auth)
	}
	sys := req.Body["messages"].([]any)[0].(map[string]any)["content"].(string)
	if !strings.Contains(sys, "Project uses uv, not pip") || !strings.Contains(sys, "Name: Ada") {
		t.Fatalf("the Python agent's memories are not in the prompt:\n%s", sys)
	}
	want := []string{"Project uses uv, not pip", "Deploys go through\nstaging first", "Tests need -race"}
	if got := memory.Parse(readFile(t, mem)); !slices.Equal(got, want) {
		t.Fatalf("MEMORY.md after the add: %q, want %q", got, want)
	}

	// A rebuild of every projection keeps USER.md byte for byte.
	mustRun(t, home, "projections", "rebuild")
	if got := readFile(t, usr); got != userBytes {
		t.Fatalf("USER.md after the rebuild: %q, was %q", got, userBytes)
	}
	if got := memory.Parse(readFile(t, mem)); !slices.Equal(got, want) {
		t.Fatalf("MEMORY.md after the rebuild: %q", got)
	}

	// The Python agent reads both files back, and its replace (which
	// refuses a file it could not write back as it read it) works.
	res := python(t, venv, home, "", "memory-read")
	if !slices.Equal(strs(res["memory"]), want) || !slices.Equal(strs(res["user"]), []string{"Name: Ada"}) {
		t.Fatalf("the Python agent reads %v", res)
	}
	python(t, venv, home, "", "memory-replace", "memory", "uv, not pip", "Project uses uv and ruff")

	// Back here, the next change keeps the Python agent's replace.
	out, errOut, code = hermes(t, env, "", "--home", home, "chat", "-q", "And that releases are tagged on Fridays")
	if code != 0 {
		t.Fatalf("second chat: exit %d\n%s\n%s", code, out, errOut)
	}
	want = []string{"Project uses uv and ruff", "Deploys go through\nstaging first", "Tests need -race", "Releases are tagged on Fridays"}
	if got := memory.Parse(readFile(t, mem)); !slices.Equal(got, want) {
		t.Fatalf("MEMORY.md after Python's replace and our add: %q, want %q", got, want)
	}

	// Skills: listed here, untouched.
	if out := mustRun(t, home, "skills", "list"); !strings.Contains(out, "deploy_check") {
		t.Fatalf("skills list:\n%s", out)
	}
	if got := readFile(t, skill); got != skillBytes {
		t.Fatalf("SKILL.md changed: %q", got)
	}

	// This build's config set leaves a config.yaml the Python agent loads,
	// with its keys kept.
	mustRun(t, home, "config", "set", "agent.max_turns", "20")
	res = python(t, venv, home, "", "config-load")
	conf := res["config"].(map[string]any)
	model := conf["model"].(map[string]any)
	agent := conf["agent"].(map[string]any)
	if model["default"] != "gpt-4o-mini" || model["provider"] != "custom" || model["api_key"] != "sk-from-python-config" ||
		agent["max_turns"] != float64(20) || agent["reasoning_effort"] != "high" {
		t.Fatalf("the Python agent loads model %v agent %v", model, agent)
	}
}

// TestPythonDefaultConfigLoads: a config.yaml holding every key of the
// Python agent's default config, as its own save_config writes it, loads
// here (doctor passes) with one warning line; a key neither has is still
// refused, naming it and its line.
func TestPythonDefaultConfigLoads(t *testing.T) {
	venv := pythonAgent(t)
	home := filepath.Join(t.TempDir(), ".hermes")
	os.MkdirAll(home, 0o700)
	cmd := exec.Command(filepath.Join(venv, "bin", "python"), "-c",
		"import copy\nfrom hermes_cli.config import DEFAULT_CONFIG, save_config\nc = copy.deepcopy(DEFAULT_CONFIG)\nc['model'] = {'default': 'gpt-4o-mini', 'provider': 'custom', 'base_url': 'http://127.0.0.1:9/v1'}\nsave_config(c, strip_defaults=False)\n")
	cmd.Env = pyEnv(home)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("save_config: %v\n%s", err, out)
	}
	out, errOut, err := run(t, home, "doctor", "--offline")
	if err != nil || !strings.Contains(out, "key(s) of the Python Hermes Agent ignored") {
		t.Fatalf("doctor on the Python agent's full config: %v\n%s\n%s", err, out, errOut)
	}
	f, _ := os.OpenFile(filepath.Join(home, "config.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("nonsense_section:\n  x: 1\n")
	f.Close()
	lines := strings.Count(readFile(t, filepath.Join(home, "config.yaml")), "\n")
	out, errOut, err = run(t, home, "doctor", "--offline")
	if err == nil || !strings.Contains(out, "line "+strconv.Itoa(lines-1)+": unknown key nonsense_section") {
		t.Fatalf("a key neither has: %v\n%s\n%s", err, out, errOut)
	}
}

// TestImportPythonHome: import hermes-state of a Python agent's home
// elsewhere brings its sessions, adds its memory entries to this home's
// (keeping the entries here) and copies its skills (categories kept, none
// replaced); a second import adds nothing.
func TestImportPythonHome(t *testing.T) {
	venv := pythonAgent(t)
	py := filepath.Join(t.TempDir(), ".hermes")
	os.MkdirAll(py, 0o700)
	python(t, venv, py, "", "memory-add", "memory", "Project uses uv, not pip")
	python(t, venv, py, "", "memory-add", "memory", "Shell is zsh")
	python(t, venv, py, "", "memory-add", "user", "Name: Ada")
	python(t, venv, py, "---\nname: deploy_check\ndescription: Check a deploy before it ships\n---\n\nRun the smoke tests.\n", "skill-create", "deploy_check", "devops")
	python(t, venv, py, "", "session", "20260301_090000_aaaaaa", "How full is my disk?")

	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, "memories"), 0o700)
	os.WriteFile(filepath.Join(home, "memories", "MEMORY.md"), []byte("Shell is zsh\n§\nEditor is helix\n"), 0o600)
	out := mustRun(t, home, "import", "hermes-state", filepath.Join(py, "state.db"))
	if !strings.Contains(out, "imported 1 sessions") || !strings.Contains(out, "imported 2 memory entries and 1 skills") {
		t.Fatalf("import:\n%s", out)
	}
	want := []string{"Shell is zsh", "Editor is helix", "Project uses uv, not pip"}
	if got := memory.Parse(readFile(t, filepath.Join(home, "memories", "MEMORY.md"))); !slices.Equal(got, want) {
		t.Fatalf("MEMORY.md %q, want %q", got, want)
	}
	res := python(t, venv, home, "", "memory-read")
	if !slices.Equal(strs(res["memory"]), want) || !slices.Equal(strs(res["user"]), []string{"Name: Ada"}) {
		t.Fatalf("the Python agent reads the imported home as %v", res)
	}
	skill := filepath.Join("skills", "devops", "deploy_check", "SKILL.md")
	if readFile(t, filepath.Join(home, skill)) != readFile(t, filepath.Join(py, skill)) {
		t.Fatal("the skill was not copied as it is")
	}
	if out := mustRun(t, home, "sessions", "list"); !strings.Contains(out, "How full is my disk") && !strings.Contains(out, "20260301") {
		t.Fatalf("sessions list:\n%s", out)
	}
	out = mustRun(t, home, "import", "hermes-state", filepath.Join(py, "state.db"))
	if !strings.Contains(out, "imported 0 sessions") || !strings.Contains(out, "imported 0 memory entries and 0 skills; 1 skills already there") {
		t.Fatalf("second import:\n%s", out)
	}
	if got := memory.Parse(readFile(t, filepath.Join(home, "memories", "MEMORY.md"))); !slices.Equal(got, want) {
		t.Fatalf("MEMORY.md after the second import %q", got)
	}
}

// TestPythonKeysInAuthAndEnv: the API key the Python agent keeps in its
// auth.json credential pool (hermes auth add) is used for its provider,
// and one it wrote to .env (hermes config set NAME KEY) wins over it.
func TestPythonKeysInAuthAndEnv(t *testing.T) {
	venv := pythonAgent(t)
	srv := llmtest.New(llmtest.Reply{Content: "one"}, llmtest.Reply{Content: "two"})
	defer srv.Close()
	home := filepath.Join(t.TempDir(), ".hermes")
	os.MkdirAll(home, 0o700)
	pythonHermes(t, venv, home, "config", "set", "model.default", "openai/gpt-4o-mini")
	pythonHermes(t, venv, home, "config", "set", "model.provider", "openrouter")
	pythonHermes(t, venv, home, "config", "set", "model.base_url", srv.URL+"/v1")
	pythonHermes(t, venv, home, "auth", "add", "openrouter", "--type", "api-key", "--api-key", "sk-or-from-auth-json")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Dir(home)}
	if out, errOut, code := hermes(t, env, "", "--home", home, "chat", "-q", "hi"); code != 0 {
		t.Fatalf("chat: exit %d\n%s\n%s", code, out, errOut)
	}
	if auth := srv.Requests()[0].Header.Get("Authorization"); auth != "Bearer sk-or-from-auth-json" {
		t.Fatalf("Authorization %q: auth.json's key not used", auth)
	}
	pythonHermes(t, venv, home, "config", "set", "OPENROUTER_API_KEY", "sk-or-from-dotenv")
	if out, errOut, code := hermes(t, env, "", "--home", home, "chat", "-q", "hi again"); code != 0 {
		t.Fatalf("chat: exit %d\n%s\n%s", code, out, errOut)
	}
	if auth := srv.Requests()[1].Header.Get("Authorization"); auth != "Bearer sk-or-from-dotenv" {
		t.Fatalf("Authorization %q: .env's key not used", auth)
	}
}

// TestMalformedMemoryFileIsLeftAlone: a MEMORY.md that is not UTF-8 text
// (it cannot be adopted without losing bytes) is named on stderr when a
// command opens the home, the command goes on, and neither the opening
// nor a rebuild changes the file; USER.md beside it is adopted.
func TestMalformedMemoryFileIsLeftAlone(t *testing.T) {
	quietEnv(t)
	home := t.TempDir()
	dir := filepath.Join(home, "memories")
	os.MkdirAll(dir, 0o700)
	bad := []byte("caf\xe9 au lait\n§\nsecond")
	os.WriteFile(filepath.Join(dir, "MEMORY.md"), bad, 0o644)
	os.WriteFile(filepath.Join(dir, "USER.md"), []byte("Name: Ada"), 0o644)
	_, errOut, err := inHome(t, home, "projections", "rebuild")
	if err != nil || !strings.Contains(errOut, "memories not adopted") || !strings.Contains(errOut, "MEMORY.md is not UTF-8 text") {
		t.Fatalf("rebuild: %v\n%s", err, errOut)
	}
	if got := readFile(t, filepath.Join(dir, "MEMORY.md")); got != string(bad) {
		t.Fatalf("MEMORY.md changed: %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "USER.md")); got != "Name: Ada" {
		t.Fatalf("USER.md changed: %q", got)
	}
	store, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	user, _, err := memory.Current(context.Background(), store, "user")
	if err != nil || !slices.Equal(user, []string{"Name: Ada"}) {
		t.Fatalf("USER.md adopted as %q, %v", user, err)
	}
	if mem, _, _ := memory.Current(context.Background(), store, "memory"); len(mem) != 0 {
		t.Fatalf("the malformed MEMORY.md was adopted as %q", mem)
	}
}

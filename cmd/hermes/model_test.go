package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/model/catalog"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// noKeys empties the catalog's key variables, so the machine's do not
// decide what the commands print.
func noKeys(t *testing.T) {
	t.Helper()
	quietEnv(t)
	for _, p := range catalog.All() {
		for _, k := range append([]string{p.BaseURLEnv}, p.KeyEnv...) {
			if k != "" {
				t.Setenv(k, "")
			}
		}
	}
}

func readConfig(t *testing.T, home string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runPicker drives `hermes model` as a person at a terminal would, with
// script as the lines typed.
func runPicker(t *testing.T, home, script string) (string, error) {
	t.Helper()
	var out strings.Builder
	g := &app.Factory{HomeFlag: home, IO: app.IOStreams{In: strings.NewReader(script), Out: &out, ErrOut: &out}}
	err := runModel(context.Background(), &modelOptions{app: g, io: g.IO, interactive: true})
	return out.String(), err
}

// The picker lists the providers, then the chosen one's models with their
// windows and prices, and writes the choice into config.yaml, keeping the
// file's other keys and its comments; the result resolves to the provider
// picked.
func TestModelPickerWritesConfig(t *testing.T) {
	noKeys(t)
	home := t.TempDir()
	writeConfig(t, home, "# my settings\nmodel:\n  default: gpt-4o-mini\n  provider: openai # was openai\nagent:\n  max_turns: 12 # keep\n")
	// A typo first: the picker suggests and asks again.
	out, err := runPicker(t, home, "gemeni\ngemini\n3\n")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"Current: openai / gpt-4o-mini", "openrouter", "did you mean gemini", "gemini-3.5-flash", "1.05M context, price unknown",
		"model.provider = gemini, model.default = gemini-3.5-flash", "set GOOGLE_API_KEY or GEMINI_API_KEY"} {
		if !strings.Contains(out, want) {
			t.Errorf("picker output lacks %q:\n%s", want, out)
		}
	}
	cfg := readConfig(t, home)
	for _, want := range []string{"# my settings", "max_turns: 12 # keep", "provider: gemini", "default: gemini-3.5-flash",
		"base_url: https://generativelanguage.googleapis.com/v1beta"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config.yaml lacks %q:\n%s", want, cfg)
		}
	}
	c, err := config.Load(home)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GEMINI_API_KEY", "g")
	r, err := config.Resolve(home, c, config.Overrides{})
	if err != nil || r.LLM.Provider != "gemini" || r.Model != "gemini-3.5-flash" || r.LLM.KeyEnv != "GEMINI_API_KEY" || c.Agent.MaxTurns != 12 {
		t.Fatalf("resolved %+v %v", r.LLM, err)
	}
}

// A local server: the picker asks for its address (Enter keeps the
// default) and takes a model name the catalog does not list; a
// `model: NAME` scalar becomes the mapping form, and a pinned api_mode
// follows the new provider.
func TestModelPickerLocalServer(t *testing.T) {
	noKeys(t)
	home := t.TempDir()
	writeConfig(t, home, "model: gpt-4o\napi_mode: anthropic_messages\n")
	n := 0
	for i, p := range catalog.All() {
		if p.ID == "vllm" {
			n = i + 1
		}
	}
	out, err := runPicker(t, home, strings.Join([]string{strconv.Itoa(n), "http://gpu-box:8000/v1", "", "qwen3-coder"}, "\n")+"\n")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	cfg := readConfig(t, home)
	for _, want := range []string{"provider: vllm", "default: qwen3-coder", "base_url: http://gpu-box:8000/v1", "api_mode: chat_completions"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config.yaml lacks %q:\n%s", want, cfg)
		}
	}
	if strings.Contains(out, "needs a key") {
		t.Errorf("a local server was said to need a key:\n%s", out)
	}
}

// A script that runs out of answers ends the picker with an error and
// leaves config.yaml as it was.
func TestModelPickerInputEnds(t *testing.T) {
	noKeys(t)
	home := t.TempDir()
	writeConfig(t, home, "model: gpt-4o\n")
	if _, err := runPicker(t, home, "openrouter\n"); err == nil || !strings.Contains(err.Error(), "input ended") {
		t.Fatalf("error %v", err)
	}
	if cfg := readConfig(t, home); cfg != "model: gpt-4o\n" {
		t.Fatalf("config.yaml changed:\n%s", cfg)
	}
}

func TestModelListAndSet(t *testing.T) {
	noKeys(t)
	home := t.TempDir()
	out, _, err := inHome(t, home, "model", "list")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"openrouter", "OPENROUTER_API_KEY", "gemini_native", "lmstudio", "local, key optional (LM_API_KEY)"} {
		if !strings.Contains(out, want) {
			t.Errorf("model list lacks %q:\n%s", want, out)
		}
	}
	out, _, err = inHome(t, home, "model", "list", "--provider", "deepseek")
	if err != nil || !strings.Contains(out, "deepseek-v4-pro (default)") || !strings.Contains(out, "0.435") || !strings.Contains(out, "set DEEPSEEK_API_KEY") {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, _, err := inHome(t, home, "model", "list", "--provider", "deepseak"); err == nil || !strings.Contains(err.Error(), "did you mean deepseek") {
		t.Fatalf("unknown provider: %v", err)
	}

	// PROVIDER/MODEL, a model with a slash in its name included.
	out, errOut, err := inHome(t, home, "model", "set", "openrouter/anthropic/claude-opus-4.8")
	if err != nil || errOut != "" || !strings.Contains(out, "model.default = anthropic/claude-opus-4.8") {
		t.Fatalf("%v\n%s%s", err, out, errOut)
	}
	cfg := readConfig(t, home)
	if !strings.Contains(cfg, "provider: openrouter") || !strings.Contains(cfg, "base_url: https://openrouter.ai/api/v1") {
		t.Fatalf("config.yaml:\n%s", cfg)
	}
	// The provider alone: its first model.
	if out, _, err := inHome(t, home, "model", "set", "anthropic"); err != nil || !strings.Contains(out, "model.default = claude-fable-5") {
		t.Fatalf("%v\n%s", err, out)
	}
	// A model the catalog does not list is set, with a note.
	if _, errOut, err := inHome(t, home, "model", "set", "groq/llama-3.3-70b-versatile"); err != nil || errOut != "" {
		t.Fatalf("%v %s", err, errOut)
	}
	if _, errOut, err := inHome(t, home, "model", "set", "deepseek/deepseek-v9"); err != nil || !strings.Contains(errOut, "not among deepseek's listed models") {
		t.Fatalf("%v %s", err, errOut)
	}
	if _, _, err := inHome(t, home, "model", "set", "azure/gpt-5.4"); err == nil || !strings.Contains(err.Error(), "--base-url") {
		t.Fatalf("azure without an endpoint: %v", err)
	}
	if _, _, err := inHome(t, home, "model", "set", "nosuch/m"); err == nil || !strings.Contains(err.Error(), "not a provider") {
		t.Fatalf("unknown provider: %v", err)
	}
	// Without a terminal, `hermes model` shows the choice.
	out, _, err = inHome(t, home, "model")
	if err != nil || !strings.Contains(out, "provider  deepseek") || !strings.Contains(out, "model     deepseek-v9") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// Through the binary: a catalog provider without its key is refused
// before any request, naming every variable it may come from; a mistyped
// provider gets the nearest name.
func TestProviderKeyAndTypo(t *testing.T) {
	home := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	_, errOut, code := hermes(t, env, "", "--home", home, "chat", "--provider", "gemini", "--model", "gemini-3.5-flash", "-q", "hi")
	if code == 0 || !strings.Contains(errOut, "no API key for gemini: set GOOGLE_API_KEY or GEMINI_API_KEY") {
		t.Fatalf("missing key: %d\n%s", code, errOut)
	}
	_, errOut, code = hermes(t, env, "", "--home", home, "chat", "--provider", "deepsek", "--model", "m", "-q", "hi")
	if code == 0 || !strings.Contains(errOut, "did you mean deepseek") {
		t.Fatalf("typo: %d\n%s", code, errOut)
	}
	// A local server needs no key.
	_, errOut, _ = hermes(t, env, "", "--home", home, "chat", "--provider", "ollama", "--base-url", "http://127.0.0.1:1/v1", "--model", "m", "-q", "hi")
	if strings.Contains(errOut, "no API key") || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Fatalf("local server:\n%s", errOut)
	}
}

// hermes setup takes any provider of the catalog, with its key variable
// and first model as the defaults offered.
func TestSetupCatalogProvider(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "OK"})
	defer srv.Close()
	home := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	// Provider, base URL, Enter for the default model, the key.
	out, errOut, code := hermes(t, env, "deepseek\n"+srv.URL+"/v1\n\nsk-ds-test\n", "--home", home, "setup")
	if code != 0 || !strings.Contains(errOut, "Model [deepseek-v4-pro]") {
		t.Fatalf("setup: %d %s %s", code, out, errOut)
	}
	req := srv.Requests()[0]
	if req.Body["model"] != "deepseek-v4-pro" || req.Header.Get("Authorization") != "Bearer sk-ds-test" {
		t.Fatalf("test call %v %q", req.Body["model"], req.Header.Get("Authorization"))
	}
	dotenv, _ := os.ReadFile(filepath.Join(home, ".env"))
	if cfg := readConfig(t, home); !strings.Contains(string(dotenv), "DEEPSEEK_API_KEY=sk-ds-test") || !strings.Contains(cfg, "provider: deepseek") {
		t.Fatalf(".env %q\nconfig.yaml %s", dotenv, cfg)
	}
	_, errOut, code = hermes(t, env, "", "--home", t.TempDir(), "setup", "--provider", "deepsek")
	if code == 0 || !strings.Contains(errOut, "did you mean deepseek") {
		t.Fatalf("typo: %d %s", code, errOut)
	}
}

// doctor asks a Gemini endpoint for its models with Gemini's key header.
func TestDoctorGemini(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1beta/models" || r.Header.Get("X-Goog-Api-Key") != "g-key" {
			http.Error(w, `{"error":{"message":"no"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"models":[]}`))
	}))
	defer srv.Close()
	home := t.TempDir()
	writeConfig(t, home, "model:\n  default: gemini-3.5-flash\n  provider: gemini\n")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GEMINI_BASE_URL=" + srv.URL + "/v1beta", "GEMINI_API_KEY=g-key"}
	out, _, _ := hermes(t, env, "", "--home", home, "doctor")
	if !strings.Contains(out, "✓ provider") {
		t.Fatalf("doctor:\n%s", out)
	}
}

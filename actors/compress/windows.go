package compress

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/hermes-go/hermes/actors/model/catalog"
)

// knownWindows are context windows of well-known models (prefix match).
var knownWindows = []struct {
	prefix string
	tokens int
}{
	{"gpt-4.1", 1_047_576}, {"gpt-5", 400_000}, {"gpt-4o", 128_000}, {"gpt-4-turbo", 128_000}, {"gpt-4", 8_192},
	{"gpt-3.5", 16_385}, {"o1", 200_000}, {"o3", 200_000}, {"o4", 200_000},
	{"claude", 200_000}, {"gemini", 1_048_576}, {"deepseek", 128_000}, {"qwen", 32_768},
	{"llama-3", 128_000}, {"mistral", 32_768}, {"gemma-3", 32_768}, {"hermes", 128_000},
}

// DefaultWindow is assumed for unknown models.
const DefaultWindow = 128_000

// Windows resolves a model's context window: configuration first, then
// limits confirmed by overflow errors (remembered on disk), then the
// provider catalog's models, then the table of model families.
type Windows struct {
	// Path is the JSON file of confirmed limits ($HERMES_HOME/context_limits.json).
	Path string
	// Override is the configured window (0: none).
	Override int

	mu        sync.Mutex
	confirmed map[string]int
}

func baseName(model string) string {
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		model = model[i+1:]
	}
	return strings.ToLower(model)
}

func (w *Windows) load() {
	if w.confirmed != nil {
		return
	}
	w.confirmed = map[string]int{}
	if w.Path == "" {
		return
	}
	if b, err := os.ReadFile(w.Path); err == nil {
		json.Unmarshal(b, &w.confirmed)
	}
}

// Of returns model's context window in tokens.
func (w *Windows) Of(model string) int {
	if w.Override > 0 {
		return w.Override
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.load()
	if n, ok := w.confirmed[baseName(model)]; ok {
		return n
	}
	if m, ok := catalog.Find("", model); ok && m.Window > 0 {
		return m.Window
	}
	name := baseName(model)
	for _, k := range knownWindows {
		if strings.HasPrefix(name, k.prefix) {
			return k.tokens
		}
	}
	return DefaultWindow
}

// limitRes find the limit an overflow error names, most explicit first.
var limitRes = []*regexp.Regexp{
	regexp.MustCompile(`(?i)maximum context length (?:is|of)\s*(\d{3,8})`),
	regexp.MustCompile(`(?i)context (?:window|limit|length) (?:is|of)\s*(\d{3,8})`),
	regexp.MustCompile(`(?i)(?:limit|maximum)[^\d]{0,20}(\d{3,8}) tokens`),
}

// StepDown records that model overflowed: the limit named in the error when
// there is one, else three quarters of the current window. It returns the
// new window and remembers it on disk.
func (w *Windows) StepDown(model, errMsg string) int {
	cur := w.Of(model)
	next := cur * 3 / 4
	for _, re := range limitRes {
		if m := re.FindStringSubmatch(errMsg); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && n < cur {
				next = n
			}
			break
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.load()
	w.confirmed[baseName(model)] = next
	if w.Path != "" {
		if b, err := json.MarshalIndent(w.confirmed, "", "  "); err == nil {
			os.MkdirAll(filepath.Dir(w.Path), 0o700)
			tmp := w.Path + ".tmp"
			if os.WriteFile(tmp, b, 0o600) == nil {
				os.Rename(tmp, w.Path)
			}
		}
	}
	return next
}

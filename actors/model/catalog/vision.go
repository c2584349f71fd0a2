package catalog

import "strings"

// Which well-known models take images. The lists are conservative: a
// family is named here only where its providers document image input (or
// its absence); anything else is unknown, and Vision reports it so.
var (
	// seeing are model-name prefixes (after any vendor/ prefix) of
	// models that take images.
	seeing = []string{
		"gpt-4o", "gpt-4.1", "gpt-4-turbo", "gpt-4.5", "gpt-5", "chatgpt-4o", "o1-2", "o3-2", "o4-mini",
		"claude-3", "claude-sonnet-4", "claude-opus-4", "claude-haiku-4", "claude-4",
		"gemini-1.5", "gemini-2", "gemini-3", "gemma-3",
		"grok-4", "grok-2-vision",
		"llava", "pixtral", "llama-4", "llama-3.2-11b-vision", "llama-3.2-90b-vision",
		"qwen-vl", "qwen2-vl", "qwen2.5-vl", "qwen3-vl", "kimi-k2.5", "glm-4.5v", "glm-4.6v", "mistral-medium-3", "mistral-small-3.1", "mistral-small-3.2",
	}
	// exact are whole names that take images though a shorter name that
	// begins them may not.
	exact = []string{"o1", "o3"}
	// blind are prefixes of models documented as text only.
	blind = []string{
		"deepseek", "o1-mini", "o3-mini", "gpt-3.5", "gpt-oss", "qwen3-coder", "qwen2.5-coder", "kimi-k2", "glm-4.5", "glm-4.6", "glm-4.7",
		"minimax-m", "hermes-", "nous-hermes", "codestral", "devstral", "grok-3", "grok-code",
	}
)

// Vision says whether the model takes images: sees is the answer when
// known is true. A vendor prefix (openai/gpt-4o, anthropic/claude-…) is
// ignored, as is case.
func Vision(modelID string) (sees, known bool) {
	id := strings.ToLower(modelID)
	if i := strings.LastIndex(id, "/"); i >= 0 {
		id = id[i+1:]
	}
	if id == "" {
		return false, false
	}
	for _, e := range exact {
		if id == e {
			return true, true
		}
	}
	// The longer match wins: "glm-4.5v" sees though "glm-4.5" does not,
	// "o3-mini" does not though "o3-2…" does.
	best, bestSees := 0, false
	for _, p := range seeing {
		if strings.HasPrefix(id, p) && len(p) > best {
			best, bestSees = len(p), true
		}
	}
	for _, p := range blind {
		if strings.HasPrefix(id, p) && len(p) > best {
			best, bestSees = len(p), false
		}
	}
	return bestSees, best > 0
}

// Package web is web_search and web_extract, backed by a configured search
// provider that speaks the SearxNG JSON API (GET /search?q=…&format=json).
// Without a configured provider the tools are not offered at all.
package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
)

// Config is the web: section of config.yaml.
type Config struct {
	// SearchURL is the provider's base URL (SearxNG-style JSON API).
	SearchURL string `yaml:"search_url"`
	// APIKey, when set, is sent as a Bearer token.
	APIKey string `yaml:"api_key"`
}

// HowToEnable says what to configure, for `hermes tools list`.
const HowToEnable = "web tools are off: set web.search_url in config.yaml to a SearxNG-compatible JSON search endpoint"

// Tools returns web_search and web_extract, or nil without a provider.
func Tools(c Config, client *http.Client) []tool.Tool {
	if c.SearchURL == "" {
		return nil
	}
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	return []tool.Tool{search{c, client}, extract{client}}
}

type search struct {
	c      Config
	client *http.Client
}

func (search) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "web_search", Description: "Search the web. Returns titles, URLs and snippets; use web_extract to read a page.",
		Parameters: map[string]any{"type": "object", "required": []string{"query"}, "properties": map[string]any{
			"query": map[string]any{"type": "string"},
			"limit": map[string]any{"type": "integer", "description": "results (default 5, at most 20)"},
		}}}
}
func (search) Flags() tool.Flags { return tool.Flags{ReadOnly: true} }

func (s search) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return "", fmt.Errorf("invalid arguments: %v", err)
	}
	if strings.TrimSpace(a.Query) == "" {
		return "", errors.New("query is empty")
	}
	if a.Limit <= 0 {
		a.Limit = 5
	}
	a.Limit = min(a.Limit, 20)
	u, err := url.Parse(strings.TrimRight(s.c.SearchURL, "/") + "/search")
	if err != nil {
		return "", fmt.Errorf("web.search_url: %w", err)
	}
	q := u.Query()
	q.Set("q", a.Query)
	q.Set("format", "json")
	u.RawQuery = q.Encode()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if s.c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+s.c.APIKey)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("search provider: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return "", fmt.Errorf("search provider answered %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	var body struct {
		Results []struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			Content string `json:"content"`
		} `json:"results"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 5<<20)).Decode(&body); err != nil {
		return "", fmt.Errorf("search provider sent no JSON results: %v", err)
	}
	if len(body.Results) == 0 {
		return "no results", nil
	}
	var b strings.Builder
	for i, r := range body.Results {
		if i == a.Limit {
			break
		}
		fmt.Fprintf(&b, "%d. %s\n   %s\n   %s\n", i+1, r.Title, r.URL, strings.TrimSpace(r.Content))
	}
	return b.String(), nil
}

type extract struct{ client *http.Client }

func (extract) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "web_extract", Description: "Fetch web pages and return their readable text.",
		Parameters: map[string]any{"type": "object", "required": []string{"urls"}, "properties": map[string]any{
			"urls": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		}}}
}
func (extract) Flags() tool.Flags { return tool.Flags{ReadOnly: true} }

var (
	dropBlocks = regexp.MustCompile(`(?is)<(script|style|noscript|svg|head)[^>]*>.*?</(script|style|noscript|svg|head)>`)
	breaks     = regexp.MustCompile(`(?i)<(br|/p|/div|/li|/h[1-6]|/tr)\s*/?>`)
	tags       = regexp.MustCompile(`(?s)<[^>]+>`)
	spaces     = regexp.MustCompile(`[ \t\r\f\v]+`)
	blankLines = regexp.MustCompile(`\n\s*\n+`)
)

// Text turns HTML into readable text.
func Text(page string) string {
	t := dropBlocks.ReplaceAllString(page, " ")
	t = breaks.ReplaceAllString(t, "\n")
	t = tags.ReplaceAllString(t, " ")
	t = html.UnescapeString(t)
	t = spaces.ReplaceAllString(t, " ")
	t = blankLines.ReplaceAllString(t, "\n\n")
	return strings.TrimSpace(t)
}

func (e extract) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		URLs []string `json:"urls"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return "", fmt.Errorf("invalid arguments: %v", err)
	}
	if len(a.URLs) == 0 {
		return "", errors.New("urls is empty")
	}
	var b strings.Builder
	for _, raw := range a.URLs[:min(len(a.URLs), 5)] {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			fmt.Fprintf(&b, "## %s\n(error: only http and https URLs can be fetched)\n\n", raw)
			continue
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
		req.Header.Set("User-Agent", "hermes-go (web_extract)")
		resp, err := e.client.Do(req)
		if err != nil {
			fmt.Fprintf(&b, "## %s\n(error: %v)\n\n", raw, err)
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 2<<20))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			fmt.Fprintf(&b, "## %s\n(error: %s)\n\n", raw, resp.Status)
			continue
		}
		text := string(body)
		if strings.Contains(resp.Header.Get("Content-Type"), "html") {
			text = Text(text)
		}
		if len(text) > 20000 {
			text = text[:20000] + "\n[… page cut at 20,000 characters]"
		}
		fmt.Fprintf(&b, "## %s\n%s\n\n", raw, text)
	}
	return strings.TrimSpace(b.String()), nil
}

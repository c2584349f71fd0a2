package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"os"
	"path/filepath"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxSaved is the largest binary content saved for the model to open.
const maxSaved = 20 << 20

// render turns a result's content into the text the model reads: text as
// it is, images, audio and binary resources saved under the cache
// directory and named by path (the tool result is text; file and vision
// tools can open the path), resource links with the tool that reads
// them, and structured content as JSON when no text carries it.
func (s *Server) render(content []sdk.Content, structured any) string {
	var parts []string
	hasText := false
	for _, c := range content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
			hasText = true
		case *sdk.ImageContent:
			parts = append(parts, s.save("image", c.MIMEType, "", c.Data))
		case *sdk.AudioContent:
			parts = append(parts, s.save("audio", c.MIMEType, "", c.Data))
		case *sdk.ResourceLink:
			d := "uri=" + c.URI
			if c.Name != "" {
				d += ", name=" + c.Name
			}
			if c.MIMEType != "" {
				d += ", mimeType=" + c.MIMEType
			}
			if c.Description != "" {
				d += ", description=" + oneLine(c.Description)
			}
			parts = append(parts, fmt.Sprintf("[resource link: %s — read it with %s]", d, ToolName(s.name, "read_resource")))
		case *sdk.EmbeddedResource:
			if c.Resource != nil {
				parts = append(parts, s.renderResource(c.Resource))
			}
		case nil:
		default:
			b, _ := json.Marshal(c)
			parts = append(parts, string(b))
		}
	}
	if structured != nil && !hasText {
		b, err := json.Marshal(structured)
		if err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

// renderResource is a resource's text, or where its bytes were saved.
func (s *Server) renderResource(r *sdk.ResourceContents) string {
	if r == nil {
		return ""
	}
	if r.Blob == nil {
		return r.Text
	}
	return s.save("resource", r.MIMEType, r.URI, r.Blob)
}

// save writes binary content to the cache directory, named by its hash.
func (s *Server) save(kind, mimeType, uri string, data []byte) string {
	what := kind
	if mimeType != "" {
		what += " " + mimeType
	}
	if uri != "" {
		what += " " + uri
	}
	switch {
	case s.opts.CacheDir == "":
		return fmt.Sprintf("[%s, %d bytes: not saved, no cache directory]", what, len(data))
	case len(data) > maxSaved:
		return fmt.Sprintf("[%s, %d bytes: too large to save]", what, len(data))
	}
	sum := sha256.Sum256(data)
	ext := ""
	if exts, _ := mime.ExtensionsByType(mimeType); len(exts) > 0 {
		ext = exts[len(exts)-1]
	}
	if ext == "" {
		if e := filepath.Ext(uri); len(e) > 1 && len(e) <= 6 {
			ext = e
		} else {
			ext = ".bin"
		}
	}
	dir := s.opts.CacheDir
	path := filepath.Join(dir, safeName(s.name, 40)+"-"+hex.EncodeToString(sum[:8])+ext)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Sprintf("[%s, %d bytes: could not be saved: %v]", what, len(data), err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Sprintf("[%s, %d bytes: could not be saved: %v]", what, len(data), err)
	}
	return fmt.Sprintf("[%s saved to %s (%d bytes)]", what, path, len(data))
}

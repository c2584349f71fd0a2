package apiserver

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// A reply's MEDIA:<path> tags (what image_generate and text_to_speech
// answer with) name files on this host; for an API client, the tags of
// files under Options.MediaDir become Markdown links to /v1/media/…,
// which serves them to holders of the key. Streamed answers keep the tag
// as it was written.

var mediaTag = regexp.MustCompile("MEDIA:([^\\s\"'`)\\]]+)")

// withMedia rewrites the MEDIA: tags of files under MediaDir as links.
func (s *Server) withMedia(text string) string {
	if s.opts.MediaDir == "" || !strings.Contains(text, "MEDIA:") {
		return text
	}
	return mediaTag.ReplaceAllStringFunc(text, func(m string) string {
		p := strings.TrimRight(strings.TrimPrefix(m, "MEDIA:"), ".,;:!?")
		rel, ok := s.mediaRel(p)
		if !ok {
			return m
		}
		link := "/v1/media/" + filepath.ToSlash(rel)
		name := filepath.Base(rel)
		if isImageName(name) {
			return "![" + name + "](" + link + ")" + m[len("MEDIA:")+len(p):]
		}
		return "[" + name + "](" + link + ")" + m[len("MEDIA:")+len(p):]
	})
}

// mediaRel is where p lies under MediaDir (links followed), if it is a
// file there.
func (s *Server) mediaRel(p string) (string, bool) {
	root, err := filepath.EvalSymlinks(s.opts.MediaDir)
	if err != nil {
		return "", false
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", false
	}
	if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

func isImageName(n string) bool {
	switch strings.ToLower(filepath.Ext(n)) {
	case ".png", ".jpg", ".jpeg", ".gif", ".webp":
		return true
	}
	return false
}

// media serves a file of MediaDir.
func (s *Server) media(w http.ResponseWriter, r *http.Request) {
	rel := filepath.FromSlash(r.PathValue("path"))
	if s.opts.MediaDir == "" || rel == "" {
		fail(w, http.StatusNotFound, "invalid_request_error", "not_found", "no such media file")
		return
	}
	real, ok := s.mediaRel(filepath.Join(s.opts.MediaDir, rel))
	if !ok {
		fail(w, http.StatusNotFound, "invalid_request_error", "not_found", "no such media file")
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.ServeFile(w, r, filepath.Join(s.opts.MediaDir, real))
}

// SendsMedia reports whether the server links a reply's MEDIA: files
// itself (gateway.MediaSender): when it has a media directory.
func (s *Server) SendsMedia() bool { return s.opts.MediaDir != "" }

package apiserver

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// /v1/skills, /v1/toolsets and /v1/capabilities tell a client what this
// server's agent has, without asking the model.

// SkillInfo is one skill as /v1/skills lists it (upstream's fields).
type SkillInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Category    string `json:"category"`
	// Offered: the API's sessions offer the skill (it is not turned off
	// for the API, its tools are there).
	Offered bool `json:"offered"`
}

// SkillDoc is one skill with its instructions (GET /v1/skills/{name}).
type SkillDoc struct {
	SkillInfo
	Content string `json:"content"`
}

// Toolset is one toolset as /v1/toolsets lists it (upstream's fields).
type Toolset struct {
	Name        string   `json:"name"`
	Label       string   `json:"label"`
	Description string   `json:"description"`
	Enabled     bool     `json:"enabled"`
	Configured  bool     `json:"configured"`
	Tools       []string `json:"tools"`
}

// ErrNoSkill is what Catalog.Skill returns for a name that is no skill.
var ErrNoSkill = errors.New("no such skill")

// Catalog is what the agent behind this server has: the home's skills and
// the tool registry.
type Catalog interface {
	Skills(ctx context.Context) ([]SkillInfo, error)
	// Skill returns one skill (ErrNoSkill when there is none by name).
	Skill(ctx context.Context, name string) (SkillDoc, error)
	Toolsets(ctx context.Context) ([]Toolset, error)
}

var skillName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

func (s *Server) catalog(w http.ResponseWriter) Catalog {
	if s.opts.Catalog == nil {
		fail(w, http.StatusNotImplemented, serverError, "not_available", "skills and toolsets are not available on this server")
	}
	return s.opts.Catalog
}

func (s *Server) listSkills(w http.ResponseWriter, r *http.Request) {
	c := s.catalog(w)
	if c == nil {
		return
	}
	all, err := c.Skills(r.Context())
	if err != nil {
		s.readFailed(w, "list skills", err)
		return
	}
	slices.SortFunc(all, func(a, b SkillInfo) int {
		if c := strings.Compare(a.Category, b.Category); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	writeJSON(w, http.StatusOK, newList(all))
}

func (s *Server) showSkill(w http.ResponseWriter, r *http.Request) {
	c := s.catalog(w)
	if c == nil {
		return
	}
	name := r.PathValue("name")
	if !skillName.MatchString(name) {
		fail(w, http.StatusBadRequest, invalidRequest, "invalid_skill_name", "skill name "+name+": lowercase letters, digits and hyphens")
		return
	}
	doc, err := c.Skill(r.Context(), name)
	if errors.Is(err, ErrNoSkill) {
		fail(w, http.StatusNotFound, notFoundError, "skill_not_found", "no skill "+name+": GET /v1/skills lists them")
		return
	}
	if err != nil {
		s.readFailed(w, "skill "+name, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "hermes.skill", "skill": doc})
}

func (s *Server) listToolsets(w http.ResponseWriter, r *http.Request) {
	c := s.catalog(w)
	if c == nil {
		return
	}
	all, err := c.Toolsets(r.Context())
	if err != nil {
		s.readFailed(w, "list toolsets", err)
		return
	}
	if all == nil {
		all = []Toolset{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "platform": "api_server", "data": all})
}

type endpoint struct {
	Method string `json:"method"`
	Path   string `json:"path"`
}

// capabilities answers GET /v1/capabilities: what this server offers, in
// upstream's shape, so that a client can tell which routes are here.
func (s *Server) capabilities(w http.ResponseWriter, _ *http.Request) {
	sessionsOn := s.opts.Archive != nil
	writes := sessionsOn && s.opts.Sessions != nil
	jobsOn := s.opts.Cron != nil && s.opts.Cron.Jobs != nil
	eps := map[string]endpoint{
		"health":              {"GET", "/health"},
		"models":              {"GET", "/v1/models"},
		"chat_completions":    {"POST", "/v1/chat/completions"},
		"responses":           {"POST", "/v1/responses"},
		"response":            {"GET", "/v1/responses/{response_id}"},
		"response_delete":     {"DELETE", "/v1/responses/{response_id}"},
		"capabilities":        {"GET", "/v1/capabilities"},
		"approvals":           {"GET", "/v1/approvals"},
		"approval":            {"POST", "/v1/approvals/{session_id}"},
		"media":               {"GET", "/v1/media/{path}"},
		"sessions":            {"GET", "/api/sessions"},
		"session":             {"GET", "/api/sessions/{session_id}"},
		"session_events":      {"GET", "/api/sessions/{session_id}/events"},
		"session_messages":    {"GET", "/api/sessions/{session_id}/messages"},
		"session_fork":        {"POST", "/api/sessions/{session_id}/fork"},
		"search":              {"GET", "/api/search"},
		"session_create":      {"POST", "/api/sessions"},
		"session_update":      {"PATCH", "/api/sessions/{session_id}"},
		"session_delete":      {"DELETE", "/api/sessions/{session_id}"},
		"session_chat":        {"POST", "/api/sessions/{session_id}/chat"},
		"session_chat_stream": {"POST", "/api/sessions/{session_id}/chat/stream"},
		"runs":                {"POST", "/v1/runs"},
		"run_status":          {"GET", "/v1/runs/{run_id}"},
		"run_events":          {"GET", "/v1/runs/{run_id}/events"},
		"run_approval":        {"POST", "/v1/runs/{run_id}/approval"},
		"run_stop":            {"POST", "/v1/runs/{run_id}/stop"},
	}
	if !sessionsOn {
		for _, k := range []string{"sessions", "session", "session_events", "session_messages", "session_fork", "response", "runs", "run_status", "run_events", "run_approval", "run_stop", "session_chat", "session_chat_stream"} {
			delete(eps, k)
		}
	}
	if !writes {
		for _, k := range []string{"session_create", "session_update", "session_delete"} {
			delete(eps, k)
		}
	}
	if s.opts.Catalog != nil {
		eps["skills"], eps["skill"], eps["toolsets"] = endpoint{"GET", "/v1/skills"}, endpoint{"GET", "/v1/skills/{name}"}, endpoint{"GET", "/v1/toolsets"}
	}
	if jobsOn {
		eps["jobs"], eps["job_create"], eps["job"] = endpoint{"GET", "/api/jobs"}, endpoint{"POST", "/api/jobs"}, endpoint{"GET", "/api/jobs/{job_id}"}
		eps["job_update"], eps["job_delete"] = endpoint{"PATCH", "/api/jobs/{job_id}"}, endpoint{"DELETE", "/api/jobs/{job_id}"}
		eps["job_pause"], eps["job_resume"] = endpoint{"POST", "/api/jobs/{job_id}/pause"}, endpoint{"POST", "/api/jobs/{job_id}/resume"}
		if s.opts.Cron.RunNow != nil {
			eps["job_run"] = endpoint{"POST", "/api/jobs/{job_id}/run"}
		}
	}
	if s.opts.Search == nil {
		delete(eps, "search")
	}
	if s.opts.Responses == nil {
		delete(eps, "response_delete")
	}
	if s.dash != nil {
		eps["dashboard"] = endpoint{"GET", "/dashboard/"}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object":   "hermes.api_server.capabilities",
		"platform": "hermes-agent",
		"model":    first(s.opts.Model, Alias),
		"auth":     map[string]any{"type": "bearer", "required": s.opts.Key != ""},
		"runtime": map[string]any{"mode": "server_agent", "tool_execution": "server", "split_runtime": false,
			"description": "The agent runs on the server: its tools run on this host (under its sandbox), not the client's."},
		"features": map[string]any{
			"chat_completions": true, "chat_completions_streaming": true, "responses_api": true, "responses_streaming": true,
			"run_submission": sessionsOn && writes, "run_status": sessionsOn, "run_events_sse": sessionsOn, "run_stop": sessionsOn && s.opts.Stopper != nil,
			"run_approval_response": sessionsOn, "tool_progress_events": false, "approval_events": true,
			"session_resources": sessionsOn, "session_chat": sessionsOn, "session_chat_streaming": sessionsOn, "session_fork": sessionsOn,
			"session_write": writes, "admin_config_rw": false, "jobs_admin": jobsOn, "memory_write_api": false,
			"skills_api": s.opts.Catalog != nil, "toolsets_api": s.opts.Catalog != nil, "audio_api": false, "realtime_voice": false,
			"session_continuity_header": SessionHeader, "cors": len(s.opts.CORSOrigins) > 0,
		},
		"endpoints": eps,
	})
}

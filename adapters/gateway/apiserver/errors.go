package apiserver

import (
	"encoding/json"
	"net/http"
)

// apiError is the body of every error answer, in OpenAI's shape, so that
// the official clients raise it with its message.
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// Error types clients branch on (OpenAI's names).
const (
	invalidRequest  = "invalid_request_error"
	authError       = "authentication_error"
	permissionError = "permission_error"
	notFoundError   = "not_found_error"
	serverError     = "server_error"
	rateLimitError  = "rate_limit_error"
)

func ptr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// fail writes an OpenAI-style error answer.
func fail(w http.ResponseWriter, status int, typ, code, msg string) {
	writeJSON(w, status, map[string]apiError{"error": {Message: msg, Type: typ, Code: ptr(code)}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"could not encode the answer","type":"server_error","param":null,"code":null}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

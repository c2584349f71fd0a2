package telegramtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server is an in-process fake of the Bot API, for what telegram-test-api
// cannot show: it confirms updates by offset as Telegram does (an update
// is delivered again until a later getUpdates asks past it), holds
// getUpdates open for its timeout, serves files (getFile and the file
// download path), answers sendChatAction and editMessageText, and fails calls on demand with
// Telegram's error bodies (429 with retry_after, 400, 401, 403, 5xx).
type Server struct {
	*httptest.Server
	// Token is the only token it accepts (401 otherwise).
	Token string

	mu      sync.Mutex
	updates []map[string]any
	nextID  int
	nextMsg int
	calls   []Call
	files   map[string]fakeFile
	fails   map[string][]Failure
	wake    chan struct{}
}

// Call is a Bot API call the server answered.
type Call struct {
	Method string
	Params map[string]any
	At     time.Time
	// Status is the error code answered (0: success).
	Status int
	// Files are the files a multipart call uploaded, by field
	// (sendVoice's voice, sendPhoto's photo, …).
	Files map[string]File
}

// File is an uploaded file.
type File struct {
	Name string
	Data []byte
}

// Failure is an answer queued for a method: an error, or (Code 0) a
// normal answer, to let calls through before a failure.
type Failure struct {
	// Code is the HTTP status and error_code (5xx answers with an HTML
	// body, as a proxy in front of the Bot API does).
	Code        int
	Description string
	RetryAfter  int
}

type fakeFile struct {
	path string
	data []byte
}

// NewServer starts a fake Bot API on loopback for token.
func NewServer(token string) *Server {
	s := &Server{Token: token, nextID: 1, nextMsg: 1000, files: map[string]fakeFile{}, fails: map[string][]Failure{}, wake: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// Push queues an update (its update_id is assigned) and returns its id.
func (s *Server) Push(update map[string]any) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextID
	s.nextID++
	update["update_id"] = id
	s.updates = append(s.updates, update)
	close(s.wake)
	s.wake = make(chan struct{})
	return id
}

// AddFile makes a file downloadable: getFile(id) answers path, and the
// download path serves data.
func (s *Server) AddFile(id, path string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[id] = fakeFile{path: path, data: data}
}

// Fail makes the next calls of method fail, one failure per call.
func (s *Server) Fail(method string, fs ...Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails[method] = append(s.fails[method], fs...)
}

// Calls returns the calls of method so far ("" for all).
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Pending is the number of updates not yet confirmed by an offset.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.updates)
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/file/bot"); ok {
		s.download(w, rest)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		writeError(w, Failure{Code: http.StatusNotFound, Description: "Not Found"})
		return
	}
	params := map[string]any{}
	var files map[string]File
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		// Files are sent as multipart forms, as the Bot API takes them.
		if err := r.ParseMultipartForm(64 << 20); err != nil {
			writeError(w, Failure{Code: http.StatusBadRequest, Description: "Bad Request: " + err.Error()})
			return
		}
		for k, v := range r.MultipartForm.Value {
			params[k] = v[0]
		}
		files = map[string]File{}
		for k, fhs := range r.MultipartForm.File {
			f, err := fhs[0].Open()
			if err != nil {
				writeError(w, Failure{Code: http.StatusBadRequest, Description: "Bad Request: " + err.Error()})
				return
			}
			data, _ := io.ReadAll(f)
			f.Close()
			files[k] = File{Name: fhs[0].Filename, Data: data}
		}
	}
	body, _ := io.ReadAll(r.Body)
	if len(body) > 0 && files == nil {
		if err := json.Unmarshal(body, &params); err != nil {
			writeError(w, Failure{Code: http.StatusBadRequest, Description: "Bad Request: the fake reads JSON bodies only"})
			return
		}
	}
	call := Call{Method: method, Params: params, Files: files, At: time.Now()}
	if token != s.Token {
		call.Status = http.StatusUnauthorized
		s.record(call)
		writeError(w, Failure{Code: http.StatusUnauthorized, Description: "Unauthorized"})
		return
	}
	s.mu.Lock()
	if q := s.fails[method]; len(q) > 0 && q[0].Code == 0 {
		s.fails[method] = q[1:]
	} else if len(q) > 0 {
		f := q[0]
		s.fails[method] = q[1:]
		call.Status = f.Code
		s.calls = append(s.calls, call)
		s.mu.Unlock()
		writeError(w, f)
		return
	}
	s.mu.Unlock()
	s.record(call)
	switch method {
	case "getMe":
		writeResult(w, map[string]any{"id": 424242, "is_bot": true, "first_name": "Hermes", "username": BotUsername})
	case "deleteWebhook", "setWebhook", "sendChatAction", "answerCallbackQuery":
		writeResult(w, true)
	case "getUpdates":
		writeResult(w, s.getUpdates(r, params))
	case "sendMessage":
		s.mu.Lock()
		s.nextMsg++
		id := s.nextMsg
		s.mu.Unlock()
		msg := map[string]any{"message_id": id, "date": time.Now().Unix(), "text": params["text"],
			"chat": map[string]any{"id": params["chat_id"], "type": "private"}, "from": map[string]any{"id": 424242, "is_bot": true, "first_name": "Hermes"}}
		writeResult(w, msg)
	case "editMessageText":
		msg := map[string]any{"message_id": params["message_id"], "date": time.Now().Unix(), "edit_date": time.Now().Unix(), "text": params["text"],
			"chat": map[string]any{"id": params["chat_id"], "type": "private"}, "from": map[string]any{"id": 424242, "is_bot": true, "first_name": "Hermes"}}
		writeResult(w, msg)
	case "sendVoice", "sendAudio", "sendPhoto", "sendDocument":
		s.mu.Lock()
		s.nextMsg++
		id := s.nextMsg
		s.mu.Unlock()
		chat, _ := strconv.ParseInt(fmt.Sprint(params["chat_id"]), 10, 64)
		msg := map[string]any{"message_id": id, "date": time.Now().Unix(),
			"chat": map[string]any{"id": chat, "type": "private"}, "from": map[string]any{"id": 424242, "is_bot": true, "first_name": "Hermes"}}
		for k, f := range files {
			sent := map[string]any{"file_id": fmt.Sprintf("sent%d", id), "file_unique_id": fmt.Sprintf("usent%d", id), "file_size": len(f.Data)}
			if k == "photo" {
				msg[k] = []any{sent} // the sizes of a photo
			} else {
				msg[k] = sent
			}
		}
		writeResult(w, msg)
	case "getFile":
		id, _ := params["file_id"].(string)
		s.mu.Lock()
		f, ok := s.files[id]
		s.mu.Unlock()
		if !ok {
			writeError(w, Failure{Code: http.StatusBadRequest, Description: "Bad Request: invalid file_id"})
			return
		}
		writeResult(w, map[string]any{"file_id": id, "file_unique_id": "u" + id, "file_size": len(f.data), "file_path": f.path})
	default:
		writeError(w, Failure{Code: http.StatusNotFound, Description: "Not Found: method not found"})
	}
}

func (s *Server) record(c Call) {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
}

// getUpdates drops the updates below offset (they are confirmed) and
// returns the rest, waiting up to timeout seconds for one to arrive.
func (s *Server) getUpdates(r *http.Request, params map[string]any) []map[string]any {
	offset, _ := params["offset"].(float64)
	timeout, _ := params["timeout"].(float64)
	limit, _ := params["limit"].(float64)
	deadline := time.Now().Add(time.Duration(timeout * float64(time.Second)))
	for {
		s.mu.Lock()
		kept := s.updates[:0]
		for _, u := range s.updates {
			if id, _ := u["update_id"].(int); float64(id) >= offset {
				kept = append(kept, u)
			}
		}
		s.updates = kept
		out := append([]map[string]any(nil), kept...)
		wake := s.wake
		s.mu.Unlock()
		if limit > 0 && len(out) > int(limit) {
			out = out[:int(limit)]
		}
		if len(out) > 0 || !time.Now().Before(deadline) {
			return out
		}
		select {
		case <-wake:
		case <-time.After(time.Until(deadline)):
		case <-r.Context().Done():
			return nil
		}
	}
}

func (s *Server) download(w http.ResponseWriter, rest string) {
	token, path, _ := strings.Cut(rest, "/")
	if token != s.Token {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	var data []byte
	found := false
	for _, f := range s.files {
		if f.path == path {
			data, found = f.data, true
		}
	}
	q := s.fails["download"]
	var fail *Failure
	if len(q) > 0 {
		if q[0].Code != 0 {
			fail = &q[0]
		}
		s.fails["download"] = q[1:]
	}
	s.calls = append(s.calls, Call{Method: "download", Params: map[string]any{"path": path}, At: time.Now()})
	s.mu.Unlock()
	switch {
	case fail != nil:
		http.Error(w, fail.Description, fail.Code)
	case !found:
		http.Error(w, "Not Found", http.StatusNotFound)
	default:
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(data)
	}
}

func writeResult(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": v})
}

func writeError(w http.ResponseWriter, f Failure) {
	if f.Code >= 500 {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(f.Code)
		fmt.Fprintf(w, "<html><body>%d %s</body></html>", f.Code, f.Description)
		return
	}
	body := map[string]any{"ok": false, "error_code": f.Code, "description": f.Description}
	if f.RetryAfter > 0 {
		body["parameters"] = map[string]any{"retry_after": f.RetryAfter}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.Code)
	json.NewEncoder(w).Encode(body)
}

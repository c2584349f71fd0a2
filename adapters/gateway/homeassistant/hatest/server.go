// Package hatest runs a real Home Assistant server for the Home Assistant
// adapter's tests: the homeassistant package from PyPI (installed by
// .ci/run into .ci/ha-venv, or named by HERMES_HASS), started with `hass
// -c DIR` on a free loopback port and a minimal configuration (http,
// websocket_api, onboarding, persistent_notification, input_boolean and
// input_text entities). Start onboards an owner user through the
// onboarding REST API and makes a long-lived access token over the
// WebSocket API, as a person does in the user interface.
package hatest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Entities the configuration defines: a switchable porch light, a door
// sensor stand-in, and text fields (input_text.<name>) that tests set to
// any text, up to 255 characters.
const (
	PorchLight = "input_boolean.porch_light"
	Door       = "input_boolean.door"
)

// TextFields are the names of the input_text entities.
var TextFields = []string{"alice", "bob", "carol"}

// Binary finds the hass executable: HERMES_HASS, else .ci/ha-venv/bin/hass
// in the module's checkout.
func Binary() (string, bool) {
	if p := os.Getenv("HERMES_HASS"); p != "" {
		_, err := os.Stat(p)
		return p, err == nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, ".ci", "ha-venv", "bin", "hass")
			_, err := os.Stat(p)
			return p, err == nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", false
		}
		dir = up
	}
}

// Require skips the test when Home Assistant is not installed, and fails
// it when CI is set (.ci/run installs it).
func Require(tb testing.TB) {
	tb.Helper()
	if _, ok := Binary(); ok {
		return
	}
	if os.Getenv("CI") != "" {
		tb.Fatal("Home Assistant is not installed (.ci/ha-venv/bin/hass, or HERMES_HASS): .ci/run installs it with pip install homeassistant==2024.3.3")
	}
	tb.Skip("Home Assistant is not installed (.ci/run installs it into .ci/ha-venv): skipping the tests against a real server")
}

// Server is a running Home Assistant.
type Server struct {
	// URL is the server's base URL (http://127.0.0.1:port).
	URL string
	// Token is the owner's long-lived access token.
	Token string
	// Dir is the configuration directory.
	Dir string

	tb   testing.TB
	port int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

const clientID = "http://127.0.0.1/"

// Start writes the configuration, starts Home Assistant, onboards the
// owner and makes the token; it stops the server when the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	Require(tb)
	dir := tb.TempDir()
	s := &Server{Dir: dir, tb: tb, port: freePort(tb)}
	s.URL = "http://127.0.0.1:" + strconv.Itoa(s.port)
	var fields strings.Builder
	for _, f := range TextFields {
		fmt.Fprintf(&fields, "  %s:\n    name: %s\n    max: 255\n", f, strings.ToUpper(f[:1])+f[1:])
	}
	conf := fmt.Sprintf(`# written by hatest for one test
homeassistant:
  name: Hermes test home
  latitude: 52.37
  longitude: 4.89
  elevation: 0
  unit_system: metric
  time_zone: UTC
  currency: EUR
  country: NL
http:
  server_host: 127.0.0.1
  server_port: %d
api:
websocket_api:
onboarding:
persistent_notification:
input_boolean:
  porch_light:
    name: Porch light
  door:
    name: Front door
input_text:
%slogger:
  default: warning
`, s.port, fields.String())
	if err := os.WriteFile(filepath.Join(dir, "configuration.yaml"), []byte(conf), 0o600); err != nil {
		tb.Fatal(err)
	}
	s.start()
	tb.Cleanup(s.Stop)
	s.onboard()
	return s
}

func (s *Server) start() {
	s.tb.Helper()
	bin, _ := Binary()
	out, err := os.OpenFile(filepath.Join(s.Dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		s.tb.Fatal(err)
	}
	defer out.Close()
	// --skip-pip: every requirement of this configuration comes with the
	// package; Home Assistant must not reach for the network.
	cmd := exec.Command(bin, "-c", s.Dir, "--skip-pip", "--log-file", filepath.Join(s.Dir, "home-assistant.log"))
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		s.tb.Fatalf("start hass: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			s.tb.Fatalf("hass exited at start:\n%s", s.Log())
		default:
		}
		if s.ready() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.Stop()
	s.tb.Fatalf("Home Assistant did not serve on %s in 90 s:\n%s", s.URL, s.Log())
}

// ready says whether the server has finished starting: /api/config says
// RUNNING (with a token), or onboarding answers (before one exists).
func (s *Server) ready() bool {
	if s.Token == "" {
		resp, err := http.Get(s.URL + "/api/onboarding")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}
	var cfg struct {
		State string `json:"state"`
	}
	return s.call(http.MethodGet, "/api/config", nil, &cfg) == nil && cfg.State == "RUNNING"
}

// onboard creates the owner user, trades the code for an access token and
// makes the long-lived token.
func (s *Server) onboard() {
	s.tb.Helper()
	body, _ := json.Marshal(map[string]string{"client_id": clientID, "name": "Owner", "username": "owner",
		"password": "owner-password-1", "language": "en"})
	resp, err := http.Post(s.URL+"/api/onboarding/users", "application/json", bytes.NewReader(body))
	if err != nil {
		s.tb.Fatal(err)
	}
	var code struct {
		AuthCode string `json:"auth_code"`
	}
	err = decode(resp, &code)
	if err != nil || code.AuthCode == "" {
		s.tb.Fatalf("onboarding the owner: %v", err)
	}
	resp, err = http.PostForm(s.URL+"/auth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code.AuthCode}, "client_id": {clientID}})
	if err != nil {
		s.tb.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := decode(resp, &tok); err != nil || tok.AccessToken == "" {
		s.tb.Fatalf("the owner's access token: %v", err)
	}
	var long string
	if err := s.ws(tok.AccessToken, map[string]any{"type": "auth/long_lived_access_token", "client_name": "hermes test", "lifespan": 365}, &long); err != nil {
		s.tb.Fatalf("a long-lived access token: %v", err)
	}
	s.Token = long
}

// Stop stops the server (SIGTERM: it saves its state, the auth store
// included, and exits), killing it after 30 s.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// Restart stops the server and starts it again on the same port and
// configuration; it returns once it runs again.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Stop()
	s.start()
}

// Log is the server's log so far.
func (s *Server) Log() string {
	a, _ := os.ReadFile(filepath.Join(s.Dir, "stdout.log"))
	b, _ := os.ReadFile(filepath.Join(s.Dir, "home-assistant.log"))
	return string(a) + string(b)
}

// Call calls the REST API with the owner's token: method path with body
// (JSON-encoded when not nil), decoding the answer into out when not nil.
func (s *Server) Call(method, path string, body, out any) error {
	return s.call(method, path, body, out)
}

func (s *Server) call(method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.Token)
	req.Header.Set("Content-Type", "application/json")
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	return decode(resp, out)
}

// Service calls domain.service with data.
func (s *Server) Service(domain, service string, data map[string]any) error {
	return s.call(http.MethodPost, "/api/services/"+domain+"/"+service, data, nil)
}

// Toggle switches an input_boolean.
func (s *Server) Toggle(entity string) error {
	return s.Service("input_boolean", "toggle", map[string]any{"entity_id": entity})
}

// SetText sets input_text.<field> to text.
func (s *Server) SetText(field, text string) error {
	return s.Service("input_text", "set_value", map[string]any{"entity_id": "input_text." + field, "value": text})
}

// Notification is a persistent notification as the WebSocket API lists
// it.
type Notification struct {
	ID        string `json:"notification_id"`
	Title     string `json:"title"`
	Message   string `json:"message"`
	CreatedAt string `json:"created_at"`
}

// Notifications lists the persistent notifications, oldest first.
func (s *Server) Notifications() ([]Notification, error) {
	var ns []Notification
	err := s.ws(s.Token, map[string]any{"type": "persistent_notification/get"}, &ns)
	return ns, err
}

// ws runs one WebSocket command authenticated with token and decodes its
// result into out.
func (s *Server) ws(token string, cmd map[string]any, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(s.URL, "http")+"/api/websocket", nil)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var m struct {
		ID      int             `json:"id"`
		Type    string          `json:"type"`
		Success bool            `json:"success"`
		Result  json.RawMessage `json:"result"`
		Error   *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := c.ReadJSON(&m); err != nil {
		return err
	}
	if err := c.WriteJSON(map[string]any{"type": "auth", "access_token": token}); err != nil {
		return err
	}
	if err := c.ReadJSON(&m); err != nil || m.Type != "auth_ok" {
		return fmt.Errorf("websocket auth: %q %v", m.Type, err)
	}
	cmd["id"] = 1
	if err := c.WriteJSON(cmd); err != nil {
		return err
	}
	for {
		m.Type, m.Error = "", nil
		if err := c.ReadJSON(&m); err != nil {
			return err
		}
		if m.Type != "result" || m.ID != 1 {
			continue
		}
		if !m.Success {
			if m.Error != nil {
				return errors.New(m.Error.Message)
			}
			return errors.New("command failed")
		}
		return json.Unmarshal(m.Result, out)
	}
}

func decode(resp *http.Response, out any) error {
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

func freePort(tb testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

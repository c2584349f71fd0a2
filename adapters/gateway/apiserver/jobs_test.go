package apiserver_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/adapters/gateway/apiserver"
	"github.com/hermes-go/hermes/schema"
)

// TestJobRoutes: /api/jobs changes jobs as events of their streams, and
// refuses what it does not take by name.
func TestJobRoutes(t *testing.T) {
	r := newRig(t, nil, func(o *apiserver.Options) {
		// The rig's store, as the responses log holds it.
		o.Cron = &apiserver.Cron{Jobs: cron.NewJobs(o.Responses.(apiserver.StoreResponses).Store, nil)}
	})
	type jobAnswer struct {
		Job struct {
			ID              string         `json:"id"`
			Name            string         `json:"name"`
			State           string         `json:"state"`
			Enabled         bool           `json:"enabled"`
			Schedule        map[string]any `json:"schedule"`
			ScheduleDisplay string         `json:"schedule_display"`
		} `json:"job"`
	}
	send := func(method, path, body string, want int) jobAnswer {
		t.Helper()
		ct := ""
		if body != "" {
			ct = "application/json"
		}
		resp, b := r.do(t, method, path, ct, []byte(body), nil)
		if resp.StatusCode != want {
			t.Fatalf("%s %s %s: %d, want %d: %s", method, path, body, resp.StatusCode, want, b)
		}
		var a jobAnswer
		_ = json.Unmarshal(b, &a)
		return a
	}
	send("POST", "/api/jobs", `{"name":"n","schedule":"every 1h","prompt":"p","skills":["x"]}`, 400)
	send("POST", "/api/jobs", `{"name":"n","schedule":"every 1h"}`, 400)
	send("POST", "/api/jobs", `{"schedule":"every 1h","prompt":"p"}`, 400)
	send("POST", "/api/jobs", `["not", "an", "object"]`, 400)
	if n := countTypes(t, r.store, "", schema.TypeJobCreated); n != 0 {
		t.Fatalf("refused requests created %d jobs", n)
	}
	j := send("POST", "/api/jobs", `{"name":"digest","schedule":"every 1h","prompt":"Summarise"}`, 200).Job
	if j.State != "scheduled" || !j.Enabled || j.Schedule["kind"] != "interval" {
		t.Fatalf("created: %+v", j)
	}
	path := "/api/jobs/" + j.ID
	send("PATCH", path, `{"bogus": 1}`, 400)
	send("PATCH", path, `{"name": 5}`, 400)
	if u := send("PATCH", path, `{"name":"renamed","schedule":"every 3h"}`, 200).Job; u.Name != "renamed" || u.ScheduleDisplay != "every 3h" {
		t.Fatalf("updated: %+v", u)
	}
	if u := send("PATCH", path, `{"enabled": false}`, 200).Job; u.State != "paused" || u.Enabled {
		t.Fatalf("disabled: %+v", u)
	}
	if u := send("POST", path+"/resume", "", 200).Job; u.State != "scheduled" {
		t.Fatalf("resumed: %+v", u)
	}
	stream := cron.JobStream(j.ID)
	for typ, want := range map[string]int{schema.TypeJobUpdated: 1, schema.TypeJobPaused: 1, schema.TypeJobResumed: 1} {
		if n := countTypes(t, r.store, stream, typ); n != want {
			t.Fatalf("%s: %d events, want %d", typ, n, want)
		}
	}
	send("POST", path+"/run", "", http.StatusNotImplemented)
	send("POST", path+"/explode", "", 404)
	send("DELETE", path, "", 200)
	send("GET", path, "", 404)
	send("POST", path+"/pause", "", 404)
	resp, b := r.do(t, "GET", "/api/jobs?include_removed=true", "", nil, nil)
	if resp.StatusCode != 200 || !contains(string(b), `"state":"removed"`) {
		t.Fatalf("removed jobs: %d %s", resp.StatusCode, b)
	}
	if resp, b := r.do(t, "GET", "/api/jobs", "", nil, nil); !contains(string(b), `"jobs":[]`) {
		t.Fatalf("jobs: %d %s", resp.StatusCode, b)
	}
}

package process

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestHTTPEchoNamesItsKernelAndCanBeMadeSick(t *testing.T) {
	srv := httptest.NewServer(&echoServer{kernel: "k-1"})
	defer srv.Close()
	get := func(path string) (int, *http.Response) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp
	}
	post := func(path string) {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("POST %s: %d", path, resp.StatusCode)
		}
	}

	resp, err := http.Get(srv.URL + "/v1/infer")
	if err != nil {
		t.Fatal(err)
	}
	var body echoed
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if body.Kernel != "k-1" || resp.Header.Get(KernelHeader) != "k-1" || body.Path != "/v1/infer" {
		t.Errorf("answer names kernel %q (header %q) for path %q, want k-1 for /v1/infer", body.Kernel, resp.Header.Get(KernelHeader), body.Path)
	}
	if code, _ := get(EchoHealthPath); code != http.StatusOK {
		t.Errorf("healthy: health path answered %d, want 200", code)
	}
	post(EchoSickPath)
	if code, _ := get(EchoHealthPath); code != http.StatusServiceUnavailable {
		t.Errorf("sick: health path answered %d, want 503", code)
	}
	if code, _ := get("/other"); code != http.StatusOK {
		t.Errorf("sick: other paths answered %d, want 200 (only the health path fails)", code)
	}
	start := time.Now()
	if code, _ := get("/slow?sleep=200ms"); code != http.StatusOK || time.Since(start) < 200*time.Millisecond {
		t.Errorf("?sleep=200ms answered %d after %s", code, time.Since(start))
	}
	if code, _ := get("/slow?sleep=1h"); code != http.StatusBadRequest {
		t.Errorf("?sleep=1h answered %d, want 400", code)
	}
	post(EchoWellPath)
	if code, _ := get(EchoHealthPath); code != http.StatusOK {
		t.Errorf("well again: health path answered %d, want 200", code)
	}
}

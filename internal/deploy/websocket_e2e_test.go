package deploy_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/sokovan-go/sokovan/internal/agent/runtime/process"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// A websocket opened through a deployment's proxy reaches a route's
// http-echo and carries messages both ways for as long as it stays open,
// including past the proxy's route table refresh; a websocket with no
// token is refused before it reaches any route.
func TestDeploymentProxyTunnelsWebsockets(t *testing.T) {
	e := startDev(t)
	var d v1.Deployment
	if code := e.call("POST", "/v1/deployments", v1.CreateDeploymentRequest{Name: "ws", Image: "http-echo",
		Resources: map[string]string{"cpu": "1", "mem": "64m"}, HealthCheck: fastHealth()}, &d); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	e.waitServing("ws", 1)

	dial := func(token string) (*websocket.Conn, error) {
		wsURL := "ws" + strings.TrimPrefix(e.url, "http") + "/v1/deployments/ws/proxy" + process.EchoWebsocketPath
		cfg, err := websocket.NewConfig(wsURL, e.url)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			cfg.Header.Set("Authorization", "Bearer "+token)
		}
		return websocket.DialConfig(cfg)
	}
	ws, err := dial(e.token)
	if err != nil {
		t.Fatalf("websocket through the proxy: %v", err)
	}
	defer ws.Close()
	_ = ws.SetDeadline(time.Now().Add(20 * time.Second))
	for i, msg := range []string{"hello", strings.Repeat("x", 70000), "after the route table refresh"} {
		if i == 2 {
			time.Sleep(600 * time.Millisecond) // longer than the proxy's route table lasts
		}
		if err := websocket.Message.Send(ws, msg); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		var got string
		if err := websocket.Message.Receive(ws, &got); err != nil {
			t.Fatalf("receive %d: %v", i, err)
		}
		if got != msg {
			t.Fatalf("message %d came back as %d bytes %.20q, want %d bytes %.20q", i, len(got), got, len(msg), msg)
		}
	}
	if _, err := dial(""); err == nil {
		t.Errorf("a websocket without a token was opened")
	}
}

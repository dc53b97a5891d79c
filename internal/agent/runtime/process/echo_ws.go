package process

import (
	"fmt"
	"os"

	"golang.org/x/net/websocket"
)

// EchoWebsocketPath is where http-echo takes websockets: every message
// it receives (up to maxEchoBody) is sent back whole, as text, until the
// client closes. It lets
// tests check that a proxy tunnels the upgrade and both directions.
const EchoWebsocketPath = "/ws"

// echoWebsocket accepts any Origin: http-echo stands in for a model
// server behind a proxy that has already authenticated the caller.
var echoWebsocket = websocket.Server{Handler: func(ws *websocket.Conn) {
	fmt.Fprintf(os.Stdout, "http-echo: websocket from %s\n", ws.Request().RemoteAddr)
	ws.MaxPayloadBytes = maxEchoBody
	for {
		// Whole messages, not a byte copy, so a message comes back as
		// one however the frames were cut.
		var msg string
		if err := websocket.Message.Receive(ws, &msg); err != nil {
			return
		}
		if err := websocket.Message.Send(ws, msg); err != nil {
			return
		}
	}
}}

package api

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// proxyLimits bounds what proxied connections may hold. Each proxied
// request or websocket holds a descriptor towards the client and one
// towards the kernel for as long as it lasts; without bounds one user
// holding many slow requests or websockets exhausts the manager's
// descriptors, and /readyz, the API and every other user fail with it.
// So each user and each session may hold only so many at once, all of
// them together stay below a share of the process's descriptor limit (the
// rest is the API's, the agents' and the store's reserve), and a proxied
// connection on which nothing moves for the idle timeout is closed.
type proxyLimits struct {
	perUser, perSession, total int
	idle                       time.Duration

	mu        sync.Mutex
	users     map[string]int
	sessions  map[domain.SessionID]int
	inFlight  int
	transport *http.Transport
}

// defaultProxyShare is the part of the descriptor limit proxied
// connections may hold: each holds two.
const defaultProxyShare = 4

func newProxyLimits(c Config) *proxyLimits {
	l := &proxyLimits{perUser: c.MaxProxyPerUser, perSession: c.MaxProxyPerSession, total: c.MaxProxy,
		idle: c.ProxyIdleTimeout, users: map[string]int{}, sessions: map[domain.SessionID]int{}}
	if l.perUser <= 0 {
		l.perUser = 64
	}
	if l.perSession <= 0 {
		l.perSession = 64
	}
	if l.total <= 0 {
		l.total = 256
		var rl syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil && rl.Cur/defaultProxyShare > 256 {
			l.total = int(min(rl.Cur/defaultProxyShare, 1<<20))
		}
	}
	if l.idle <= 0 {
		l.idle = time.Hour
	}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	// One transport for both proxies, kept apart from the default one so
	// their idle connections are their own; a deployment's routes take
	// many requests each.
	l.transport = &http.Transport{
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &idleConn{Conn: c, idle: l.idle}, nil
		},
	}
	return l
}

// acquire takes one proxied connection for user on session, or says which
// bound refuses it. An empty user or session is counted in the total
// alone: the deployment proxy's clients are the deployment's, many
// callers behind one token.
func (l *proxyLimits) acquire(user string, session domain.SessionID) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.inFlight >= l.total:
		return nil, &apiError{Status: http.StatusServiceUnavailable, Code: codeUnavailable, Message: fmt.Sprintf(
			"the manager holds its most proxied connections (%d); try again when some end", l.total)}
	case user != "" && l.users[user] >= l.perUser:
		return nil, &apiError{Status: http.StatusTooManyRequests, Code: codeExhausted, Message: fmt.Sprintf(
			"user %s holds %d proxied connections, the most one user may; close some first", user, l.perUser)}
	case session != "" && l.sessions[session] >= l.perSession:
		return nil, &apiError{Status: http.StatusTooManyRequests, Code: codeExhausted, Message: fmt.Sprintf(
			"session %s has %d proxied connections open, the most one session may; close some first", session, l.perSession)}
	}
	l.inFlight++
	if user != "" {
		l.users[user]++
	}
	if session != "" {
		l.sessions[session]++
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.inFlight--
			if user != "" {
				if l.users[user]--; l.users[user] == 0 {
					delete(l.users, user)
				}
			}
			if session != "" {
				if l.sessions[session]--; l.sessions[session] == 0 {
					delete(l.sessions, session)
				}
			}
		})
	}, nil
}

// idleConn is a connection to a kernel that ends when nothing has moved
// either way for idle: each read and write pushes the deadline on. It
// bounds a websocket or a stalled request nobody uses any more.
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c *idleConn) Read(p []byte) (int, error) {
	_ = c.Conn.SetDeadline(time.Now().Add(c.idle))
	return c.Conn.Read(p)
}

func (c *idleConn) Write(p []byte) (int, error) {
	_ = c.Conn.SetDeadline(time.Now().Add(c.idle))
	return c.Conn.Write(p)
}

package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// logFollower reads a kernel's log through the manager, from where it last
// stopped.
//
// Following polls GET /logs with ?offset= rather than holding one stream
// open: each ask is a plain, short request that any manager replica can
// answer, so a follower survives a manager restart or failover, a proxy's
// idle timeout and the kernel's agent changing nothing; and the offset makes
// each ask cost only what is new (the agent seeks to it). The price is up to
// one poll interval of delay, which a person reading logs does not notice.
type logFollower struct {
	c      *client
	id     string
	kernel string
	out    io.Writer
	poll   time.Duration
	offset int64
}

// read prints the log from the offset on and moves the offset past it.
func (f *logFollower) read(ctx context.Context) (int64, error) {
	q := url.Values{}
	if f.kernel != "" {
		q.Set("kernel", f.kernel)
	}
	if f.offset > 0 {
		q.Set("offset", strconv.FormatInt(f.offset, 10))
	}
	path := sessionPath(f.id, "/logs")
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	req, err := f.c.request(ctx, "GET", path, nil)
	if err != nil {
		return 0, err
	}
	resp, err := f.c.send(f.c.stream, req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(f.out, resp.Body)
	f.offset += n
	return n, err
}

// follow prints the log as it grows until the session has ended and its
// log has been read to the end after that.
func (f *logFollower) follow(ctx context.Context) error {
	for {
		// The status is read before the log, so once it says the session
		// has ended, the read after it has everything the kernel wrote.
		var s v1.Session
		if _, err := f.c.do(ctx, "GET", sessionPath(f.id), nil, &s); err != nil {
			return err
		}
		// From here on by its id: a name resolved on every poll costs
		// three reads, and could move to a new session given the name.
		f.id = s.ID
		ended := sessionEnded(s.Status)
		n, err := f.read(ctx)
		var api *apiError
		switch {
		case errors.As(err, &api) && api.Status == http.StatusConflict && !ended:
			// Not on an agent yet: nothing to read, keep waiting.
		case errors.As(err, &api) && api.Status == http.StatusNotFound && ended && f.offset > 0:
			// The kernel's agent forgot it after it ended: all was read.
			return nil
		case err != nil:
			return err
		}
		if ended {
			return nil
		}
		if n > 0 {
			continue // more may be waiting: ask again at once
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(f.poll):
		}
	}
}

// sessionEnded reports whether nothing more will happen to a session in
// status s (domain.SessionStatus.Terminal, by the API's names).
func sessionEnded(s string) bool {
	return s == "TERMINATED" || s == "CANCELLED" || s == "ERROR"
}

package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/store"
)

// events streams the store's change feed as server-sent events. The
// streams of a manager share one reader of the feed (see feed); a user may
// hold at most Config.MaxStreamsPerUser of them at once.
func (s *Server) events(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	u := caller(ctx)
	if !s.takeStream(u.ID) {
		return &apiError{Status: http.StatusTooManyRequests, Code: codeExhausted,
			Message: fmt.Sprintf("at most %d event streams at once per user: close one first", s.cfg.MaxStreamsPerUser)}
	}
	defer s.releaseStream(u.ID)
	f := store.ChangeFilter{Limit: eventBatch}
	if !isAdmin(u) {
		f.User = u.Name
	}
	named, err := s.eventSessions(r, &f)
	if err != nil {
		return err
	}
	snapshot, err := s.eventStart(r, &f, named)
	if err != nil {
		return err
	}
	st := openEventStream(w)
	st.buf.WriteString(": sokovan events\n\n") // let the client see the stream is open
	for _, sj := range snapshot {
		writeEvent(&st.buf, "", "snapshot", sj)
	}
	if !st.send() {
		return nil
	}
	if err := s.feed.subscribe(ctx); err != nil {
		return err
	}
	defer s.feed.unsubscribe()
	return s.streamChanges(ctx, st, f)
}

// eventSessions resolves the sessions ?session= names into f, which
// follows them by id.
func (s *Server) eventSessions(r *http.Request, f *store.ChangeFilter) ([]store.SessionWithKernels, error) {
	refs := r.URL.Query()["session"]
	if len(refs) > maxListItems {
		return nil, invalid("session", "follows more than %d sessions", maxListItems)
	}
	// Sessions may be named as every verb names them; the feed is by id.
	var named []store.SessionWithKernels
	for _, ref := range refs {
		sk, err := s.resolve(r.Context(), ref)
		if err != nil {
			return nil, err
		}
		named = append(named, sk)
		f.Sessions = append(f.Sessions, sk.Session.ID)
	}
	return named, nil
}

// eventStart sets where the stream starts: after Last-Event-ID (or
// ?after=), else now, with a snapshot of the named sessions that no
// later change can fall before.
func (s *Server) eventStart(r *http.Request, f *store.ChangeFilter, named []store.SessionWithKernels) ([]v1.Session, error) {
	ctx := r.Context()
	resume := r.Header.Get("Last-Event-ID")
	field := "Last-Event-ID"
	if resume == "" {
		resume, field = r.URL.Query().Get("after"), "after"
	}
	if resume != "" {
		after, err := strconv.ParseInt(resume, 10, 64)
		if err != nil || after < 0 {
			return nil, invalid(field, "must be an event id: a non-negative integer")
		}
		f.After = after
		return nil, nil
	}
	// Start now. The position is read before the sessions, so any
	// change after the snapshot is also after the position.
	after, err := s.store.LastChange(ctx)
	if err != nil {
		return nil, err
	}
	f.After = after
	// Read again after the position: a change between the first read
	// and the position would otherwise be in neither.
	var snapshot []v1.Session
	for _, sk := range named {
		sk, err := s.get(ctx, sk.Session.ID)
		if err != nil {
			return nil, err
		}
		snapshot = append(snapshot, s.sessionOut(sk))
	}
	return snapshot, nil
}

// eventStream is an open server-sent event answer: events gather in buf
// and go out, flushed, on send.
type eventStream struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf bytes.Buffer
}

func openEventStream(w http.ResponseWriter) *eventStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // the stream outlives any server write timeout
	w.WriteHeader(http.StatusOK)
	return &eventStream{w: w, rc: rc}
}

// send writes what buf holds; false when the client has gone.
func (st *eventStream) send() bool {
	if st.buf.Len() == 0 {
		return true
	}
	_, err := st.w.Write(st.buf.Bytes())
	st.buf.Reset()
	return err == nil && st.rc.Flush() == nil
}

// streamChanges sends the changes f keeps, from the shared feed or, when
// behind its window, from the store, until the client goes or the feed
// fails.
func (s *Server) streamChanges(ctx context.Context, st *eventStream, f store.ChangeFilter) error {
	keep := func(c store.Change) bool {
		return (f.User == "" || c.Owner == f.User) && (len(f.Sessions) == 0 || slices.Contains(f.Sessions, c.Session))
	}
	beat := time.NewTicker(s.cfg.EventHeartbeat)
	defer beat.Stop()
	for {
		changes, upto, next, ok, err := s.feed.since(f.After, keep)
		if ok && err == nil {
			f.After = upto
		} else if err == nil {
			// Behind the shared window: catch up from the store alone. A
			// short read has seen every change up to the feed's position
			// read before it.
			head := s.feed.position()
			changes, err = s.store.Changes(ctx, f)
			if err == nil && len(changes) < f.Limit {
				f.After = max(f.After, head)
			}
		}
		if err != nil {
			if ctx.Err() == nil {
				s.log.WarnContext(ctx, "event stream", "err", err)
				// The stream is under way: say why it ends, in the stream.
				writeEvent(&st.buf, "", "error", v1.ErrorResponse{Error: v1.Error{Code: codeUnavailable, Message: "the change feed is unavailable; reconnect"}})
				st.send()
			}
			return nil
		}
		for _, c := range changes {
			writeEvent(&st.buf, strconv.FormatInt(c.Pos, 10), string(c.Kind), changeOut(c))
			f.After = max(f.After, c.Pos)
		}
		if !st.send() {
			return nil
		}
		if !ok {
			continue // still catching up
		}
		select {
		case <-ctx.Done():
			return nil
		case <-beat.C:
			st.buf.WriteString(": keep-alive\n\n")
			if !st.send() {
				return nil
			}
		case <-next:
		}
	}
}

// writeEvent appends one event. JSON holds no raw newline, so the data is
// one line.
func writeEvent(buf *bytes.Buffer, id, event string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{}`)
	}
	if id != "" {
		fmt.Fprintf(buf, "id: %s\n", id)
	}
	fmt.Fprintf(buf, "event: %s\ndata: %s\n\n", event, b)
}

// takeStream counts one more open stream for user, unless the user is at
// the cap.
func (s *Server) takeStream(user string) bool {
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	if s.streams[user] >= s.cfg.MaxStreamsPerUser {
		return false
	}
	s.streams[user]++
	return true
}

func (s *Server) releaseStream(user string) {
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	if s.streams[user]--; s.streams[user] <= 0 {
		delete(s.streams, user)
	}
}

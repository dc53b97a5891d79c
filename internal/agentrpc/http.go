package agentrpc

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxBody caps a request body; the largest is a heartbeat of a busy agent.
const maxBody = 8 << 20

// call posts in as JSON and decodes the answer into out (when not nil).
func call(ctx context.Context, hc *http.Client, url, token string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		// An agent with a certificate, or joining, has no token: an empty
		// Bearer would read as a wrong one.
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var e Error
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if json.Unmarshal(raw, &e) == nil && e.Error != "" {
			return &StatusError{Code: resp.StatusCode, Kind: e.Code, Message: e.Error}
		}
		return &StatusError{Code: resp.StatusCode, Message: strings.TrimSpace(string(raw))}
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		// A peer of an earlier release may answer a call that now
		// expects a body with none: nothing to report.
		return nil
	}
	return json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(out)
}

// ErrInvalidSpec matches a create_kernels call the agent refused because
// it can never start the kernels as specified; retrying cannot help.
var ErrInvalidSpec = errors.New("invalid kernel spec")

// StatusError is a call the other side refused: Code is the HTTP status,
// Kind the answer's Error.Code when it gave one.
type StatusError struct {
	Code    int
	Kind    string
	Message string
}

func (e *StatusError) Error() string { return fmt.Sprintf("%d: %s", e.Code, e.Message) }

// Is makes errors.Is(err, ErrInvalidSpec) true for an invalid_spec refusal.
func (e *StatusError) Is(target error) bool {
	return target == ErrInvalidSpec && e.Code/100 == 4 && e.Kind == CodeInvalidSpec
}

// Authorized reports whether the request carries the agent token as its
// Bearer token. The compare takes constant time, so the token cannot be
// guessed a byte at a time; an empty token authorizes nothing.
func Authorized(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// RequireToken serves next only to requests that carry the agent token;
// others get 401. Both ends of the wire guard their handlers with it.
func RequireToken(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Authorized(r, token) {
			WriteError(w, http.StatusUnauthorized, errors.New("agent token required"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ReadJSON decodes a request body, ignoring fields it does not know: the
// wire grows by added omitempty fields, and a peer of a newer release must
// be understood by an older one (a refused heartbeat or event batch would
// cut an agent off, and a refused batch loses its events). On failure it
// has answered 400 and returns false.
func ReadJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if err := dec.Decode(v); err != nil {
		WriteError(w, http.StatusBadRequest, fmt.Errorf("bad request body: %w", err))
		return false
	}
	return true
}

// WriteJSON answers with v as JSON.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError answers with err's message as an Error body.
func WriteError(w http.ResponseWriter, code int, err error) {
	WriteJSON(w, code, Error{Error: err.Error()})
}

// WriteInvalidSpec answers 400 with CodeInvalidSpec: the kernels cannot be
// started as specified, and the caller should not ask again.
func WriteInvalidSpec(w http.ResponseWriter, err error) {
	WriteJSON(w, http.StatusBadRequest, Error{Error: err.Error(), Code: CodeInvalidSpec})
}

// IsRefused reports whether err is the other side saying no (4xx), as
// opposed to a network or server fault worth retrying.
func IsRefused(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code/100 == 4
}

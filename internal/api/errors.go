package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/sokovan-go/sokovan/internal/admit"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/store"
)

// Error codes, stable for tools: they say what class of failure it was,
// the message says what exactly.
const (
	codeInvalid          = "invalid_argument"
	codeUnauthenticated  = "unauthenticated"
	codePermission       = "permission_denied"
	codeNotFound         = "not_found"
	codeMethod           = "method_not_allowed"
	codeConflict         = "conflict"
	codeTooLarge         = "payload_too_large"
	codeExhausted        = "resource_exhausted"
	codeInternal         = "internal"
	codeNotImplemented   = "not_implemented"
	codeBadGateway       = "bad_gateway"
	codeUnavailable      = "unavailable"
	codeClientClosed     = "cancelled"
	statusClientClosed   = 499 // nginx's code: the client went away first
	maxErrorMessageBytes = 1024
)

// apiError is an answer other than success: a status, a code, a message
// for a person and, for a request field at fault, its path
// ("resources.mem", "depends_on[1]").
type apiError struct {
	Status  int
	Code    string
	Message string
	Field   string
}

func (e *apiError) Error() string { return e.body().Text() }

// body is what the client is sent, before fail caps the message.
func (e *apiError) body() v1.Error {
	return v1.Error{Code: e.Code, Message: e.Message, Field: e.Field}
}

func invalid(field, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: codeInvalid, Message: fmt.Sprintf(format, args...), Field: field}
}

func notFound(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusNotFound, Code: codeNotFound, Message: fmt.Sprintf(format, args...)}
}

func conflict(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusConflict, Code: codeConflict, Message: fmt.Sprintf(format, args...)}
}

func forbidden(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusForbidden, Code: codePermission, Message: fmt.Sprintf(format, args...)}
}

func unauthenticated(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusUnauthorized, Code: codeUnauthenticated, Message: fmt.Sprintf(format, args...)}
}

// admitError is admission's refusal as the API answers it: its class is
// the status and code, its field and message pass through unchanged.
func admitError(e *admit.Error) *apiError {
	out := &apiError{Status: http.StatusBadRequest, Code: codeInvalid, Message: e.Message, Field: e.Field}
	switch e.Class {
	case admit.Forbidden:
		out.Status, out.Code = http.StatusForbidden, codePermission
	case admit.Conflict:
		out.Status, out.Code = http.StatusConflict, codeConflict
	case admit.TooMany:
		out.Status, out.Code = http.StatusTooManyRequests, codeExhausted
	}
	return out
}

// fromAdmit turns admission's refusal into the API's, where callers look
// for an *apiError (a job's rejection, the name's conflict); other errors
// pass unchanged.
func fromAdmit(err error) error {
	var e *admit.Error
	if errors.As(err, &e) {
		return admitError(e)
	}
	return err
}

// classify maps an error to the answer. Store classes map to their HTTP
// meaning; anything unexpected is a 500 whose cause goes to the log, not
// to the client.
func classify(err error) *apiError {
	var ae *apiError
	var refused *admit.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &refused):
		return admitError(refused)
	case errors.Is(err, context.Canceled):
		return &apiError{Status: statusClientClosed, Code: codeClientClosed, Message: "request cancelled"}
	case errors.Is(err, store.ErrNotFound):
		return notFound("not found")
	case errors.Is(err, store.ErrConflict):
		return conflict("it already exists")
	case errors.Is(err, store.ErrGuardFailed):
		return conflict("it changed meanwhile; try again")
	case errors.Is(err, store.ErrInvalid):
		return invalid("", "the store refused the value")
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return &apiError{Status: http.StatusServiceUnavailable, Code: codeUnavailable,
			Message: "the store is unavailable; try again"}
	}
	return &apiError{Status: http.StatusInternalServerError, Code: codeInternal, Message: "internal error"}
}

// fail writes err as the answer, logging what the client is not told.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	ae := classify(err)
	if ae.Status >= 500 {
		s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if ae.Status == statusClientClosed {
		return // nobody is listening
	}
	body := ae.body()
	if len(body.Message) > maxErrorMessageBytes {
		body.Message = body.Message[:maxErrorMessageBytes] + "…"
	}
	if ae.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sokovan"`)
	}
	writeJSON(w, ae.Status, v1.ErrorResponse{Error: body})
}

// writeList answers 200 with items, each converted by out, as a
// v1.List; no items is an empty list, not null.
func writeList[T, U any](w http.ResponseWriter, items []T, out func(T) U) error {
	writeJSON(w, http.StatusOK, v1.List[U]{Items: mapped(items, out)})
	return nil
}

// mapped is items each converted by f, in order; never nil, so an empty
// list is written as [] and not null.
func mapped[T, U any](items []T, f func(T) U) []U {
	out := make([]U, len(items))
	for i, it := range items {
		out[i] = f(it)
	}
	return out
}

// writeJSON answers with v. It marshals first so that a value that cannot
// be written becomes a clean 500 rather than half a body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(v1.ErrorResponse{Error: v1.Error{Code: codeInternal, Message: "internal error"}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n')) // a client that went away is not an error here
}

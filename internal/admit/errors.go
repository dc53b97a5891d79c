package admit

import "fmt"

// Class says what kind of refusal an Error is, in the terms of an HTTP
// answer without being one: the API maps each to its status code.
type Class int

const (
	// BadRequest: the request is wrong, or could never run; the
	// submitter must change it.
	BadRequest Class = iota + 1
	// Forbidden: the submitter may not ask for this.
	Forbidden
	// Conflict: the request is right but clashes with what exists now
	// (a name taken, a group that accepts no new sessions).
	Conflict
	// TooMany: a cap on the owner's queue is reached; the same request
	// may succeed later.
	TooMany
)

func (c Class) String() string {
	switch c {
	case BadRequest:
		return "bad request"
	case Forbidden:
		return "forbidden"
	case Conflict:
		return "conflict"
	case TooMany:
		return "too many"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Error is a refusal: the submitter's to fix, never a fault of the store.
// Field is the request field at fault as a path ("resources.mem",
// "depends_on[1]"), or empty when no one field is.
type Error struct {
	Class   Class
	Field   string
	Message string
}

// Error reads as the API's error text does, so a refusal reads the same
// wherever it is shown (a route's status reason quotes it).
func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s (field: %s)", e.Message, e.Field)
	}
	return e.Message
}

func invalid(field, format string, args ...any) *Error {
	return &Error{Class: BadRequest, Field: field, Message: fmt.Sprintf(format, args...)}
}

func conflict(field, format string, args ...any) *Error {
	return &Error{Class: Conflict, Field: field, Message: fmt.Sprintf(format, args...)}
}

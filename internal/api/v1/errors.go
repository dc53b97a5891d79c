package v1

import "fmt"

// ErrorResponse is the body of every answer that is not a success, and
// the data of an `error` event on the event stream.
type ErrorResponse struct {
	Error Error `json:"error"`
}

// Error says what went wrong.
type Error struct {
	// Code is the class of failure, stable for tools: invalid_argument,
	// unauthenticated, permission_denied, not_found, method_not_allowed,
	// conflict, payload_too_large, resource_exhausted, internal,
	// not_implemented, bad_gateway, unavailable.
	Code string `json:"code"`
	// Message says what exactly, for a person.
	Message string `json:"message"`
	// Field is the request field at fault, as a path ("resources.mem",
	// "depends_on[1]"); absent when the fault is not one field's.
	Field string `json:"field,omitempty"`
}

// Text is the error as a person reads it. The server's errors and the
// CLI's messages both use it, so they word a failure alike.
func (e Error) Text() string {
	if e.Field != "" {
		return fmt.Sprintf("%s (field: %s)", e.Message, e.Field)
	}
	return e.Message
}

// Package problem is sessionbox's error vocabulary on the wire, defined
// once: each kind of failure with its problem type URI, title, HTTP status
// and the sentinel error it stands for. The API (pkg/api) turns an error
// into a kind with Of; the Go client (pkg/client) turns an answer back into
// a kind with ForType or ForStatus, so errors.Is(err, session.ErrNotFound)
// holds on both sides of the wire and a caller needs no table of its own.
//
// A new kind is one line in Kinds (and a sentinel, in pkg/session when the
// domain raises it, here when only HTTP does); the API's OpenAPI test then
// asks for it in the document's Problem.type enum.
package problem

import (
	"errors"
	"net/http"
	"strings"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// Base prefixes every problem type URI. The URIs are identifiers clients
// switch on; they never change once published.
const Base = "https://sessionbox.dev/problems/"

// Sentinels of the kinds only HTTP raises: the domain has no word for them,
// but a client may still test for them with errors.Is.
var (
	ErrMethodNotAllowed     = errors.New("method not allowed")
	ErrNotAcceptable        = errors.New("not acceptable")
	ErrUnsupportedMediaType = errors.New("unsupported media type")
	ErrInsufficientStorage  = errors.New("insufficient storage")
	ErrInternal             = errors.New("internal error")
)

// Kind is one stable (type, title, status) triple and the error it stands
// for.
type Kind struct {
	// Slug is the last segment of the type URI ("not-found").
	Slug   string
	Title  string
	Status int
	// Err is the sentinel errors.Is matches, on the server (an error of
	// this kind) and in the client (an answer of this kind).
	Err error
	// Folds are other errors the wire reports as this kind: the client
	// cannot tell them apart, so they come back as Err.
	Folds []error
	// Generic is the detail the API sends when the error carries none a
	// user can act on.
	Generic string
}

// Type is the kind's problem type URI.
func (k Kind) Type() string { return Base + k.Slug }

// is reports whether err is of this kind.
func (k Kind) is(err error) bool {
	if errors.Is(err, k.Err) {
		return true
	}
	for _, f := range k.Folds {
		if errors.Is(err, f) {
			return true
		}
	}
	return false
}

// The kinds, one per problem type the API sends.
var (
	Invalid      = Kind{Slug: "invalid-input", Title: "Invalid input", Status: http.StatusBadRequest, Err: session.ErrInvalid, Generic: "the request is not valid"}
	Unauthorized = Kind{Slug: "unauthorized", Title: "Unauthorized", Status: http.StatusUnauthorized, Err: session.ErrUnauthorized, Generic: "missing or invalid credentials"}
	Forbidden    = Kind{Slug: "forbidden", Title: "Forbidden", Status: http.StatusForbidden, Err: session.ErrForbidden, Generic: "not allowed"}
	NotFound     = Kind{Slug: "not-found", Title: "Not found", Status: http.StatusNotFound, Err: session.ErrNotFound, Generic: "not found"}
	Method       = Kind{Slug: "method-not-allowed", Title: "Method not allowed", Status: http.StatusMethodNotAllowed, Err: ErrMethodNotAllowed, Generic: "the method is not allowed here"}
	NotAccept    = Kind{Slug: "not-acceptable", Title: "Not acceptable", Status: http.StatusNotAcceptable, Err: ErrNotAcceptable, Generic: "no answer of an accepted media type"}
	Conflict     = Kind{Slug: "conflict", Title: "Conflict", Status: http.StatusConflict, Err: session.ErrConflict, Generic: "a concurrent change won; try again"}
	Gone         = Kind{Slug: "gone", Title: "Gone", Status: http.StatusGone, Err: session.ErrGone, Generic: "it is gone with the sandbox it lived in"}
	TooLarge     = Kind{Slug: "too-large", Title: "Payload too large", Status: http.StatusRequestEntityTooLarge, Err: session.ErrTooLarge, Generic: "too large"}
	MediaType    = Kind{Slug: "unsupported-media-type", Title: "Unsupported media type", Status: http.StatusUnsupportedMediaType, Err: ErrUnsupportedMediaType, Generic: "the body's media type is not supported"}
	Limit        = Kind{Slug: "limit-reached", Title: "Limit reached", Status: http.StatusTooManyRequests, Err: session.ErrLimit, Generic: "limit reached; try again later"}
	Storage      = Kind{Slug: "insufficient-storage", Title: "Insufficient storage", Status: http.StatusInsufficientStorage, Err: ErrInsufficientStorage, Generic: "the service is out of disk space"}
	Internal     = Kind{Slug: "internal", Title: "Internal error", Status: http.StatusInternalServerError, Err: ErrInternal, Generic: "an internal error occurred; quote the request id when reporting it"}
	Unavailable  = Kind{Slug: "unavailable", Title: "Upstream unavailable", Status: http.StatusBadGateway, Err: session.ErrUnavailable,
		Folds: []error{session.ErrSandboxGone}, Generic: "a service behind the API is unavailable; try again"}
	Timeout = Kind{Slug: "timeout", Title: "Timed out", Status: http.StatusGatewayTimeout, Err: session.ErrTimeout, Generic: "the operation timed out"}
)

// Kinds lists every kind, in the order Of tests them (an error may match
// more than one through wrapping) and ForStatus prefers them.
var Kinds = []Kind{
	Invalid, Unauthorized, Forbidden, NotFound, Method, NotAccept, Conflict, Gone,
	TooLarge, MediaType, Limit, Storage, Internal, Unavailable, Timeout,
}

// Of returns the kind of err, or false when err is of none.
func Of(err error) (Kind, bool) {
	// A *session.Error names its kind; the error it wraps (a provider's
	// refusal met on the way, say) must not pick the status in its place.
	var se *session.Error
	if errors.As(err, &se) && se.Kind != nil {
		for _, k := range Kinds {
			if k.is(se.Kind) {
				return k, true
			}
		}
	}
	for _, k := range Kinds {
		if k.is(err) {
			return k, true
		}
	}
	return Kind{}, false
}

// ForType returns the kind of a problem type URI, or false when it is not
// one of sessionbox's.
func ForType(uri string) (Kind, bool) {
	slug, ok := strings.CutPrefix(uri, Base)
	if !ok {
		return Kind{}, false
	}
	for _, k := range Kinds {
		if k.Slug == slug {
			return k, true
		}
	}
	return Kind{}, false
}

// ForStatus returns the first kind of an HTTP status, for an answer that
// names no type (a gateway's or proxy's own), or false when none has it.
func ForStatus(status int) (Kind, bool) {
	for _, k := range Kinds {
		if k.Status == status {
			return k, true
		}
	}
	return Kind{}, false
}

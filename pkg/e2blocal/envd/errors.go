//go:build linux

package envd

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"syscall"

	"connectrpc.com/connect"
)

// restError is the body of every envd REST error.
type restError struct {
	Message string `json:"message"`
	Code    int    `json:"code"`
}

func writeJSONError(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(restError{Message: err.Error(), Code: status})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// isNoSpace reports errors that mean the disk, the quota or the file-size
// limit is exhausted; the SDK turns 507 into NotEnoughSpaceError.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG)
}

// fsCode maps a filesystem error to the Connect code the SDKs expect.
func fsCode(err error) connect.Code {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return connect.CodeNotFound
	case errors.Is(err, fs.ErrExist), errors.Is(err, syscall.ENOTEMPTY):
		return connect.CodeAlreadyExists
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return connect.CodePermissionDenied
	case isNoSpace(err):
		return connect.CodeResourceExhausted
	case errors.Is(err, syscall.ENAMETOOLONG), errors.Is(err, syscall.EINVAL), errors.Is(err, syscall.ELOOP):
		return connect.CodeInvalidArgument
	default:
		return connect.CodeInternal
	}
}

func fsError(err error) error {
	return connect.NewError(fsCode(err), err)
}

// fsStatus maps a filesystem error to a REST status.
func fsStatus(err error) int {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return http.StatusNotFound
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return http.StatusForbidden
	case isNoSpace(err):
		return http.StatusInsufficientStorage
	case errors.Is(err, syscall.ENAMETOOLONG), errors.Is(err, syscall.EINVAL), errors.Is(err, syscall.EISDIR):
		return http.StatusBadRequest
	default:
		return http.StatusInternalServerError
	}
}

// ctxCode maps a context error to its Connect code.
func ctxCode(err error) connect.Code {
	if errors.Is(err, context.DeadlineExceeded) {
		return connect.CodeDeadlineExceeded
	}
	return connect.CodeCanceled
}

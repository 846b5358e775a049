package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
)

// decodeJSON reads one JSON object from the request into dst, strictly:
// unknown fields, wrong types, trailing data and bodies past limit are
// client errors with a detail saying which. An empty body is accepted when
// !required and leaves dst as it was.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, dst any, required bool) *Problem {
	if r.ContentLength == 0 && !required {
		// Nothing to decode, whatever type the client named for it.
		return nil
	}
	if p := checkMediaType(w, r, mediaJSON); p != nil {
		return p
	}
	body := http.MaxBytesReader(w, r.Body, s.maxJSONBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if errors.Is(err, io.EOF) {
		if required {
			return newProblem(kindInvalid, "the request body is empty; send a JSON object")
		}
		return nil
	}
	if err != nil {
		return decodeProblem(err)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return decodeProblem(err)
		}
		return newProblem(kindInvalid, "the body must hold exactly one JSON object")
	}
	return nil
}

func decodeProblem(err error) *Problem {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return newProblem(kindTooLarge, fmt.Sprintf("the request body is larger than %d bytes", mbe.Limit))
	case errors.As(err, &syn):
		return newProblem(kindInvalid, fmt.Sprintf("malformed JSON at byte %d: %v", syn.Offset, syn))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return newProblem(kindInvalid, "malformed JSON: the body ends early")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return newProblem(kindInvalid, "the body must be a JSON object")
		}
		return newProblem(kindInvalid, fmt.Sprintf("field %q must be %s, not %s", typ.Field, jsonTypeName(typ.Type), typ.Value))
	case strings.Contains(err.Error(), "unknown field"):
		return newProblem(kindInvalid, "the body has an "+strings.TrimPrefix(err.Error(), "json: "))
	}
	return newProblem(kindInvalid, "could not read the request body: "+err.Error())
}

func jsonTypeName(t reflect.Type) string {
	if t == nil {
		return "a different type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return jsonTypeName(t.Elem())
	}
	return "a different type"
}

// problems collects validation failures so one answer names all of them.
type problems []string

func (p *problems) check(ok bool, format string, args ...any) {
	if !ok {
		*p = append(*p, fmt.Sprintf(format, args...))
	}
}

func (p *problems) add(err error) {
	if err != nil {
		*p = append(*p, domainDetail(err))
	}
}

func (p problems) problem() *Problem {
	if len(p) == 0 {
		return nil
	}
	return newProblem(kindInvalid, strings.Join(p, "; "))
}

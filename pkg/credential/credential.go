// Package credential takes the caller's credential (an API key, or a bearer
// JWT where the authorizer accepts them) out of a request's headers. Every
// entry point uses it, so the same request means the same caller whether it
// reaches the API Gateway authorizer or the API served locally:
//
//  1. Authorization: Bearer <token> (the scheme in any case), when the token
//     is not empty;
//  2. otherwise X-API-Key: <token>.
//
// An Authorization header of another scheme (Basic, added by a proxy or a
// browser) is ignored when X-API-Key carries the key; alone it is refused,
// with a message naming the two accepted forms. Header names match in any
// case. Whether the token is a valid key is session.VerifyAPIKey's to say.
package credential

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Header names, in the order they are consulted.
const (
	HeaderAuthorization = "Authorization"
	HeaderAPIKey        = "X-API-Key"
)

// ErrMissing is why a request carries no usable credential; the error's
// message says what to send instead and is fit for the caller.
var ErrMissing = errors.New("an API key is required: send Authorization: Bearer <key> or X-API-Key: <key>")

// ErrBearerOnly is why a request to an authorizer that reads Authorization
// alone carries no usable credential there.
var ErrBearerOnly = errors.New("an API key is required: send Authorization: Bearer <key> (this deployment does not read X-API-Key)")

// BearerFromMap takes the credential from the Authorization header alone,
// as a Bearer token, and never from X-API-Key. It is for an authorizer
// whose answers API Gateway caches keyed on Authorization: a credential
// read from any other header would make the cached answer (the caller's
// identity) that of whoever next sends the same Authorization value.
func BearerFromMap(m map[string]string) (string, error) {
	authz, err := single(func(name string) []string { return valuesOf(m, name) }, HeaderAuthorization)
	if err != nil {
		return "", err
	}
	scheme, token, _ := strings.Cut(strings.TrimSpace(authz), " ")
	if token = strings.TrimSpace(token); !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", ErrBearerOnly
	}
	return token, nil
}

// FromHeader takes the credential from an HTTP request's headers.
func FromHeader(h http.Header) (string, error) {
	return fromValues(func(name string) []string { return h.Values(name) })
}

// FromMap takes the credential from headers given as a map, as API Gateway
// hands them to a Lambda authorizer: names as the client spelled them.
func FromMap(m map[string]string) (string, error) {
	return fromValues(func(name string) []string { return valuesOf(m, name) })
}

// valuesOf is every value of the header name in m, matched in any case.
func valuesOf(m map[string]string, name string) []string {
	var vs []string
	for k, v := range m {
		if strings.EqualFold(k, name) {
			vs = append(vs, v)
		}
	}
	return vs
}

// fromValues applies the precedence to every value each header has. A
// header given twice with different values is refused, rather than
// answered by whichever value comes first (in a map, by chance).
func fromValues(values func(name string) []string) (string, error) {
	authz, err := single(values, HeaderAuthorization)
	if err != nil {
		return "", err
	}
	key, err := single(values, HeaderAPIKey)
	if err != nil {
		return "", err
	}
	return pick(authz, key)
}

func single(values func(name string) []string, name string) (string, error) {
	vs := values(name)
	if len(vs) == 0 {
		return "", nil
	}
	for _, v := range vs[1:] {
		if v != vs[0] {
			return "", fmt.Errorf("%w (the request carries %s twice, with different values)", ErrMissing, name)
		}
	}
	return vs[0], nil
}

// pick applies the precedence to the two headers' values.
func pick(authz, apiKey string) (string, error) {
	authz = strings.TrimSpace(authz)
	scheme, token, _ := strings.Cut(authz, " ")
	if strings.EqualFold(scheme, "Bearer") {
		if token = strings.TrimSpace(token); token != "" {
			return token, nil
		}
	}
	if apiKey = strings.TrimSpace(apiKey); apiKey != "" {
		return apiKey, nil
	}
	if authz != "" {
		return "", fmt.Errorf("%w (Authorization carries no Bearer token)", ErrMissing)
	}
	return "", ErrMissing
}

package api

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
)

// schemaChecker validates JSON values (as decoded into any) against the
// subset of JSON Schema 2020-12 the OpenAPI document uses. It is strict
// where the document is: additionalProperties false, required, enum,
// const, bounds and patterns.
type schemaChecker struct {
	doc map[string]any
}

func (c schemaChecker) resolve(s map[string]any) map[string]any {
	for {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		node := any(c.doc)
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			node = node.(map[string]any)[part]
		}
		s = node.(map[string]any)
	}
}

func (c schemaChecker) check(schema map[string]any, v any, at string) error {
	s := c.resolve(schema)
	if alts, ok := s["oneOf"].([]any); ok {
		matched := 0
		var errs []string
		for _, alt := range alts {
			if err := c.check(alt.(map[string]any), v, at); err != nil {
				errs = append(errs, err.Error())
			} else {
				matched++
			}
		}
		if matched != 1 {
			return fmt.Errorf("%s: matches %d of oneOf: %s", at, matched, strings.Join(errs, " | "))
		}
	}
	if want, ok := s["const"]; ok && fmt.Sprint(want) != fmt.Sprint(v) {
		return fmt.Errorf("%s: %v is not %v", at, v, want)
	}
	if enum, ok := s["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
		return fmt.Errorf("%s: %v not in %v", at, v, enum)
	}
	if t, ok := s["type"].(string); ok {
		if err := checkType(t, v, at); err != nil {
			return err
		}
	}
	switch x := v.(type) {
	case map[string]any:
		return c.checkObject(s, x, at)
	case []any:
		if n, ok := s["minItems"].(float64); ok && float64(len(x)) < n {
			return fmt.Errorf("%s: fewer than %v items", at, n)
		}
		if n, ok := s["maxItems"].(float64); ok && float64(len(x)) > n {
			return fmt.Errorf("%s: more than %v items", at, n)
		}
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range x {
				if err := c.check(items, e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	case string:
		return checkString(s, x, at)
	case float64:
		if n, ok := s["minimum"].(float64); ok && x < n {
			return fmt.Errorf("%s: %v below %v", at, x, n)
		}
		if n, ok := s["maximum"].(float64); ok && x > n {
			return fmt.Errorf("%s: %v above %v", at, x, n)
		}
	}
	return nil
}

func checkType(t string, v any, at string) error {
	ok := false
	switch t {
	case "object":
		_, ok = v.(map[string]any)
	case "array":
		_, ok = v.([]any)
	case "string":
		_, ok = v.(string)
	case "boolean":
		_, ok = v.(bool)
	case "number":
		_, ok = v.(float64)
	case "integer":
		f, isNum := v.(float64)
		ok = isNum && f == math.Trunc(f)
	case "null":
		ok = v == nil
	}
	if !ok {
		return fmt.Errorf("%s: %v is not of type %s", at, v, t)
	}
	return nil
}

func checkString(s map[string]any, x, at string) error {
	if n, ok := s["minLength"].(float64); ok && float64(len([]rune(x))) < n {
		return fmt.Errorf("%s: shorter than %v", at, n)
	}
	if n, ok := s["maxLength"].(float64); ok && float64(len([]rune(x))) > n {
		return fmt.Errorf("%s: longer than %v", at, n)
	}
	if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(x) {
		return fmt.Errorf("%s: %q does not match %s", at, x, p)
	}
	if s["format"] == "date-time" {
		if _, err := parseRFC3339(x); err != nil {
			return fmt.Errorf("%s: %q is not a date-time", at, x)
		}
	}
	return nil
}

func (c schemaChecker) checkObject(s map[string]any, x map[string]any, at string) error {
	props, _ := s["properties"].(map[string]any)
	for _, r := range asStrings(s["required"]) {
		if _, ok := x[r]; !ok {
			return fmt.Errorf("%s: lacks required %q", at, r)
		}
	}
	if n, ok := s["maxProperties"].(float64); ok && float64(len(x)) > n {
		return fmt.Errorf("%s: more than %v properties", at, n)
	}
	names, _ := s["propertyNames"].(map[string]any)
	for k, val := range x {
		if names != nil {
			if err := checkString(names, k, at+" name"); err != nil {
				return err
			}
		}
		if ps, ok := props[k].(map[string]any); ok {
			if err := c.check(ps, val, at+"."+k); err != nil {
				return err
			}
			continue
		}
		switch extra := s["additionalProperties"].(type) {
		case bool:
			if !extra {
				return fmt.Errorf("%s: unexpected property %q", at, k)
			}
		case map[string]any:
			if err := c.check(extra, val, at+"."+k); err != nil {
				return err
			}
		}
	}
	return nil
}

func asStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, e := range list {
		out = append(out, e.(string))
	}
	return out
}

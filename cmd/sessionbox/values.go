package main

import (
	"fmt"
	"slices"
	"strings"
)

// keyValues is a repeatable K=V flag.
type keyValues map[string]string

func (kv keyValues) String() string {
	var s []string
	for k, v := range kv {
		s = append(s, k+"="+v)
	}
	return strings.Join(sortedCopy(s), ",")
}

func (kv keyValues) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not K=V", v)
	}
	kv[k] = val
	return nil
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

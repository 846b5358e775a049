package main

import (
	"errors"
	"flag"
	"fmt"
	"sort"
)

// envFlags fills each flag of fs not given on the command line from its
// environment variable (vars maps flag name to variable), through the
// flag's own parser: a flag wins over the environment, and a malformed
// variable is an error naming it and its value, as a malformed flag is.
// Call it once, after fs.Parse.
func envFlags(fs *flag.FlagSet, getenv func(string) string, vars map[string]string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	names := make([]string, 0, len(vars))
	for name := range vars {
		names = append(names, name)
	}
	sort.Strings(names)
	var errs []error
	for _, name := range names {
		env := vars[name]
		v := getenv(env)
		if given[name] || v == "" {
			continue
		}
		if err := fs.Set(name, v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not a valid value for --%s: %v", env, v, name, err))
		}
	}
	return errors.Join(errs...)
}

package main

// Every command reads its flags and documents itself the same way, so that
// help, flag placement and --json behave alike across commands:
//
//	fl := newFlags(usage{name: "status", synopsis: "[--session ID]", about: "…", api: true})
//	o := fl.apiFlags(true)             // --session, --json, --url
//	args, err := fl.parse(args)        // flags before, between or after arguments
//	c, err := o.client(getenv)         // SESSIONBOX_URL / SESSIONBOX_API_KEY
//	c, err := fl.parseClient(args, o, getenv) // both, for a command without arguments
//	return o.print(v, func() { … })    // the API's JSON with --json, text otherwise
//
// Help (-h, --help, `sessionbox help CMD`) goes to stdout and exits 0; a
// misused command says what was wrong and exits 2.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/sessionbox/sessionbox/pkg/client"
)

// usage documents one command for its help.
type usage struct {
	name     string   // the command as typed after "sessionbox", e.g. "runs"
	synopsis []string // each way to call it, after "sessionbox NAME "
	about    string   // what it does, a sentence or two
	subs     []sub    // its subcommands, if any
	// api marks clients of the API: their help lists the variables that
	// name it.
	api bool
}

// sub is one subcommand in a command's help.
type sub struct{ name, about string }

// flags is a command's flag set with its help.
type flags struct {
	*flag.FlagSet
	u usage
}

func newFlags(u usage) *flags {
	fs := flag.NewFlagSet(u.name, flag.ContinueOnError)
	// Errors and help are printed by parse, help to stdout.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flags{FlagSet: fs, u: u}
}

// errUsage marks a command used wrongly; main exits 2 on it.
type errUsage struct {
	cmd string
	err error
}

func (e *errUsage) Error() string {
	return fmt.Sprintf("%v (see `sessionbox %s --help`)", e.err, e.cmd)
}

func (e *errUsage) Unwrap() error { return e.err }

// misuse is a usage error of this command.
func (f *flags) misuse(format string, args ...any) error {
	return &errUsage{cmd: f.u.name, err: fmt.Errorf(format, args...)}
}

// parse reads flags wherever they stand among the arguments and returns
// the arguments. Go's flag package stops at the first argument, so that
// `exec '1+1' --session x` would run "1+1 --session x"; parse resumes after
// each argument instead. "--" ends the flags: what follows is arguments.
func (f *flags) parse(args []string) ([]string, error) {
	var pos []string
	for {
		if err := f.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				f.help(os.Stdout)
				return nil, flag.ErrHelp
			}
			return nil, &errUsage{cmd: f.u.name, err: err}
		}
		rest := f.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// help writes the command's help: how to call it, its subcommands, its
// flags and, for clients of the API, the variables that name the API.
func (f *flags) help(w io.Writer) {
	for i, s := range f.u.synopsis {
		lead := "usage: "
		if i > 0 {
			lead = "       "
		}
		fmt.Fprintf(w, "%ssessionbox %s %s\n", lead, f.u.name, s)
	}
	if f.u.about != "" {
		fmt.Fprintf(w, "\n%s\n", f.u.about)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(f.u.subs) > 0 {
		fmt.Fprintln(tw, "\nsubcommands:")
		for _, s := range f.u.subs {
			fmt.Fprintf(tw, "  %s\t%s\n", s.name, s.about)
		}
	}
	first := true
	f.VisitAll(func(fl *flag.Flag) {
		if first {
			fmt.Fprintln(tw, "\nflags:")
			first = false
		}
		arg, text := flag.UnquoteUsage(fl)
		arg = placeholder(fl.Name, arg, text)
		name := "--" + fl.Name
		if arg != "" {
			name += " " + arg
		}
		switch {
		case fl.DefValue == "" || fl.DefValue == "false" || fl.DefValue == "0":
		case reflect.TypeOf(fl.Value).String() == "*flag.stringValue":
			text += fmt.Sprintf(" (default %q)", fl.DefValue)
		default:
			text += " (default " + fl.DefValue + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\n", name, text)
	})
	if f.u.api {
		fmt.Fprintln(tw, "\nenvironment:")
		fmt.Fprintf(tw, "  SESSIONBOX_URL\tthe API's base URL; --url wins over it (default %s)\n", defaultURL)
		fmt.Fprintln(tw, "  SESSIONBOX_API_KEY\tthe API key (`sessionbox serve` prints one); no flag, so that it never shows in ps")
	}
	_ = tw.Flush()
}

// placeholder is the word help shows for a flag's value: the one its usage
// names in backquotes, else one made from the flag's name, since the flag
// package's type names (string, int, value) say nothing to a reader. A
// flag that counts in a unit shows the unit (--lifetime-secs SECS), a
// number N, anything else its name's last word (--data-dir DIR).
func placeholder(name, arg, usage string) string {
	generic := map[string]bool{"string": true, "value": true, "int": true, "uint": true, "float": true}
	if arg == "" || !generic[arg] {
		return strings.ToUpper(strings.ReplaceAll(arg, " ", "_"))
	}
	word := name[strings.LastIndex(name, "-")+1:]
	switch {
	case word == "secs" || word == "bytes" || word == "mib":
		return strings.ToUpper(word)
	case arg == "int" || arg == "uint" || strings.HasPrefix(name, "max-") || numericDefault.MatchString(usage):
		return "N"
	}
	return strings.ToUpper(word)
}

// numericDefault finds a usage that states a number as its default.
var numericDefault = regexp.MustCompile(`\(default -?[0-9]`)

// defaultURL is where `sessionbox serve` listens unless told otherwise.
const defaultURL = "http://127.0.0.1:8080"

// apiFlags are the flags every client of the API shares.
type apiFlags struct {
	session string
	json    bool
	url     string
	fs      *flag.FlagSet
}

// apiFlags adds --json and --url, and --session when the command acts on
// one session.
func (f *flags) apiFlags(withSession bool) *apiFlags {
	o := &apiFlags{fs: f.FlagSet}
	if withSession {
		f.StringVar(&o.session, "session", "default", "the session `ID` to act on")
	}
	f.BoolVar(&o.json, "json", false, "print the API's JSON answer instead of text")
	f.StringVar(&o.url, "url", "", "the API's base `URL` [$SESSIONBOX_URL]")
	return o
}

// print writes v as JSON with --json, else calls text.
func (o *apiFlags) print(v any, text func() error) error {
	if !o.json {
		return text()
	}
	return printJSON(os.Stdout, v)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// unknownSub is the usage error for a subcommand the command lacks, with
// the closest one it has as a hint.
func (f *flags) unknownSub(name string) error {
	known := make([]string, 0, len(f.u.subs))
	for _, s := range f.u.subs {
		known = append(known, strings.Fields(s.name)[0])
	}
	return f.misuse("unknown subcommand %q%s", name, didYouMean(name, known))
}

// noArgs refuses arguments to a command that takes none.
func (f *flags) noArgs(args []string) error {
	if len(args) > 0 {
		return f.misuse("unexpected argument %q", args[0])
	}
	return nil
}

// parseClient parses the flags of a client command that takes no
// arguments, and builds its client.
func (f *flags) parseClient(args []string, o *apiFlags, getenv func(string) string) (*client.Client, error) {
	args, err := f.parse(args)
	if err != nil {
		return nil, err
	}
	if err := f.noArgs(args); err != nil {
		return nil, err
	}
	return o.client(getenv)
}

// codeArgs is the code a command runs: the contents of the one file its one
// argument names (`exec script.py`), stdin for "-", else the arguments
// joined. A file that cannot be read is an error, not code.
func codeArgs(f *flags, args []string, stdin io.Reader) (string, error) {
	if len(args) == 1 && args[0] != "-" {
		if st, err := os.Stat(args[0]); err == nil && st.Mode().IsRegular() {
			b, err := os.ReadFile(args[0])
			if err != nil {
				return "", fmt.Errorf("read code from %s: %w", args[0], err)
			}
			return string(b), nil
		}
	}
	return joinArgs(f, args, stdin)
}

// joinArgs is a command line or code given as arguments: the arguments
// joined by spaces, or stdin for "-".
func joinArgs(f *flags, args []string, stdin io.Reader) (string, error) {
	switch {
	case len(args) == 1 && args[0] == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return "", fmt.Errorf("read code from stdin: %w", err)
		}
		return string(b), nil
	case len(args) >= 1:
		return strings.Join(args, " "), nil
	}
	return "", f.misuse("no code given")
}

package mcpserver

import (
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// Bounds the input schemas state, so a client (and the SDK, which checks
// arguments against the schema) refuses what the service would refuse.
const (
	maxTimeoutSecs = 900 // the service's longest execution, 15 minutes
	maxListDepth   = 10
	maxPackages    = 100
)

// inputSchema infers T's schema and applies edit to its properties: the
// inference knows names, types and descriptions, not limits.
func inputSchema[T any](edit func(props map[string]*jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: schema of %T: %v", *new(T), err))
	}
	if edit != nil {
		edit(s.Properties)
	}
	return s
}

func intRange(p *jsonschema.Schema, lo, hi int) {
	p.Type, p.Types = "integer", nil
	p.Minimum, p.Maximum = ptr(float64(lo)), ptr(float64(hi))
}

// list makes a required list a plain array of 1 to hi non-empty strings;
// the inference types a Go slice as ["null","array"].
func list(p *jsonschema.Schema, hi int) {
	p.Type, p.Types = "array", nil
	p.MinItems, p.MaxItems = ptr(1), ptr(hi)
	p.Items.MinLength = ptr(1)
}

func inputSchemas() map[string]*jsonschema.Schema {
	timeout := func(ps map[string]*jsonschema.Schema) { intRange(ps["timeoutSecs"], 1, maxTimeoutSecs) }
	return map[string]*jsonschema.Schema{
		"execute_python": inputSchema[ExecuteInput](timeout),
		"run_command":    inputSchema[CommandInput](timeout),
		"install_packages": inputSchema[InstallInput](func(ps map[string]*jsonschema.Schema) {
			list(ps["packages"], maxPackages)
		}),
		"upload_files_from_urls": inputSchema[UploadURLsInput](func(ps map[string]*jsonschema.Schema) {
			list(ps["urls"], session.MaxUploadURLs)
		}),
		"list_files": inputSchema[ListInput](func(ps map[string]*jsonschema.Schema) {
			intRange(ps["depth"], 1, maxListDepth)
		}),
		"read_file": inputSchema[ReadInput](func(ps map[string]*jsonschema.Schema) {
			ps["path"].MinLength = ptr(1)
			ps["offset"].Minimum = ptr(0.0)
			ps["length"].Minimum, ps["length"].Maximum = ptr(1.0), ptr(float64(DefaultMaxTextBytes-readHeadRoom))
		}),
		"write_file": inputSchema[WriteInput](func(ps map[string]*jsonschema.Schema) {
			ps["path"].MinLength = ptr(1)
			ps["encoding"].Enum = []any{"utf-8", "base64"}
		}),
		"delete_file": inputSchema[DeleteInput](func(ps map[string]*jsonschema.Schema) {
			ps["path"].MinLength = ptr(1)
		}),
		"start_command": inputSchema[StartCommandInput](func(ps map[string]*jsonschema.Schema) {
			ps["cmd"].MinLength = ptr(1)
			intRange(ps["timeoutSecs"], 0, maxBackgroundSecs)
		}),
		"read_command_output": inputSchema[ReadCommandInput](func(ps map[string]*jsonschema.Schema) {
			ps["commandId"].MinLength = ptr(1)
			intRange(ps["waitSecs"], 1, maxReadWaitSecs)
		}),
		"kill_command": inputSchema[KillCommandInput](func(ps map[string]*jsonschema.Schema) {
			ps["commandId"].MinLength = ptr(1)
		}),
	}
}

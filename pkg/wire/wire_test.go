package wire_test

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/wire"
)

// TestMatchesOpenAPI holds every wire type to the OpenAPI schema of its
// name: the same JSON field names, none missing, none extra. The server
// encodes these and the client decodes them, so a field renamed here
// without the document (or the reverse) fails before either end ships.
func TestMatchesOpenAPI(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{
		wire.Session{}, wire.SessionList{}, wire.RunAccepted{}, wire.Run{},
		wire.ContextRequest{}, wire.CodeContext{}, wire.ContextList{},
		wire.InstallRequest{}, wire.InstallResult{}, wire.FileList{},
		wire.UploadURLRequest{}, wire.UploadTicket{}, wire.ImportRequest{},
		wire.DownloadURLRequest{}, wire.DownloadTicket{}, wire.UploadURLsRequest{},
	} {
		typ := reflect.TypeOf(v)
		t.Run(typ.Name(), func(t *testing.T) {
			t.Parallel()
			schema, ok := doc.Components.Schemas[schemaName(typ.Name())]
			if !ok {
				t.Fatalf("the document has no schema %s", schemaName(typ.Name()))
			}
			var want []string
			for p := range schema.Properties {
				want = append(want, p)
			}
			slices.Sort(want)
			if got := jsonNames(typ); !slices.Equal(got, want) {
				t.Errorf("fields %v, the document's %v", got, want)
			}
		})
	}
}

// schemaName is the document's name of a wire type where Go's naming
// rules (initialisms) spell it otherwise.
func schemaName(goName string) string {
	if goName == "UploadURLsRequest" {
		return "UploadUrlsRequest"
	}
	return goName
}

func jsonNames(typ reflect.Type) []string {
	var names []string
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "-" && f.IsExported() {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

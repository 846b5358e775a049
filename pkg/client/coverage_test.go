package client_test

import (
	"encoding/json"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/client"
)

// operations maps each operationId of the API's OpenAPI document to the
// method of Client that calls it. TestEveryOperationHasAMethod holds the
// table to the document both ways.
var operations = map[string]any{
	"healthz":           (*client.Client).Health,
	"openapi":           (*client.Client).OpenAPI,
	"mcp":               (*client.Client).ConnectMCP,
	"listSessions":      (*client.Client).Sessions,
	"startSandbox":      (*client.Client).StartSandbox,
	"stopSandbox":       (*client.Client).Stop,
	"sandboxStatus":     (*client.Client).Status,
	"checkpoint":        (*client.Client).Checkpoint,
	"deleteSession":     (*client.Client).DeleteSession,
	"execute":           (*client.Client).Execute,
	"executeStream":     (*client.Client).ExecuteStream,
	"executeOnce":       (*client.Client).ExecuteOnce,
	"executeOnceStream": (*client.Client).ExecuteOnceStream,
	"reset":             (*client.Client).Reset,
	"install":           (*client.Client).Install,
	"installStream":     (*client.Client).InstallStream,
	"listFiles":         (*client.Client).ListFiles,
	"deleteFile":        (*client.Client).DeleteFile,
	"readFile":          (*client.Client).OpenFile,
	"writeFile":         (*client.Client).WriteFile,
	"uploadUrl":         (*client.Client).UploadURL,
	"importFile":        (*client.Client).ImportFile,
	"downloadUrl":       (*client.Client).DownloadURL,
	"uploadUrls":        (*client.Client).UploadURLs,
	"submitRun":         (*client.Client).SubmitRun,
	"getRun":            (*client.Client).GetRun,
	"createContext":     (*client.Client).CreateContext,
	"listContexts":      (*client.Client).Contexts,
	"deleteContext":     (*client.Client).DeleteContext,
	"resetContext":      (*client.Client).ResetContext,
	"sandboxMetrics":    (*client.Client).Metrics,
	"runCommand":        (*client.Client).RunCommand,
	"listCommands":      (*client.Client).Commands,
	"getCommand":        (*client.Client).CommandStatus,
	"killCommand":       (*client.Client).KillCommand,
	"readCommandOutput": (*client.Client).ReadCommandOutput,
}

// composites are methods built from the operations above rather than one
// operation each.
var composites = []string{
	"Upload",           // writeFile, or uploadUrl + PUT + importFile
	"Download",         // OpenDownload into a writer
	"OpenDownload",     // readFile, or downloadUrl + GET on a 413
	"OpenDownloadFrom", // OpenDownload saying where the bytes came from
	"ListDir",          // listFiles with where the listing came from
	"WaitRun",          // getRun until the run is done
	"StartCommand",     // runCommand with background: true
	"AttachCommand",    // getCommand as an NDJSON stream
}

// methodName is the name of a method expression such as
// (*client.Client).Stop.
func methodName(f any) string {
	name := runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
	return name[strings.LastIndex(name, ".")+1:]
}

// TestEveryOperationHasAMethod: every operation of the OpenAPI document
// has a method of Client, every entry of the table is an operation of the
// document, and every exported method is in the table or a composite.
func TestEveryOperationHasAMethod(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	inDoc := map[string]string{}
	for path, item := range doc.Paths {
		for method, op := range item {
			var o struct {
				OperationID string `json:"operationId"`
			}
			if json.Unmarshal(op, &o) == nil && o.OperationID != "" {
				inDoc[o.OperationID] = strings.ToUpper(method) + " " + path
			}
		}
	}
	if len(inDoc) < len(operations)/2 {
		t.Fatalf("the document names only %d operations: is it the API's?", len(inDoc))
	}
	for id, route := range inDoc {
		if _, ok := operations[id]; !ok {
			t.Errorf("operation %s (%s) has no method of client.Client: add one and map it in operations", id, route)
		}
	}
	mapped := map[string]bool{}
	for id, f := range operations {
		if _, ok := inDoc[id]; !ok {
			t.Errorf("operations maps %s, which the document does not have (renamed?)", id)
		}
		mapped[methodName(f)] = true
	}
	typ := reflect.TypeOf(&client.Client{})
	for i := range typ.NumMethod() {
		name := typ.Method(i).Name
		if !mapped[name] && !slices.Contains(composites, name) {
			t.Errorf("Client.%s is neither an operation's method in operations nor a composite", name)
		}
	}
}

package lambdaenv

// Function is one Lambda function: its name (functions/<name>, dist/<name>)
// and what it talks to.
type Function struct {
	Name  string
	Needs Needs
}

// The functions. Every API function serves the whole router; API Gateway
// decides which routes reach which function, and each function's IAM role
// allows only what its Needs cover.
var (
	// Every function that may start a sandbox reads the session's
	// workspace back into it (workspaces/*); stop and the reaper also
	// checkpoint and delete workspaces.
	Start = Function{"start", NeedStore | NeedSandboxes | NeedBlobs}
	// Stop serves stop, checkpoint and DELETE of a session.
	Stop = Function{"stop", NeedStore | NeedSandboxes | NeedBlobs}
	// Status serves the session reads (status, sandbox metrics) and
	// GET /v1/runs/{runId}, which presigns large results
	// (runs/*; its role may only read them).
	Status  = Function{"status", NeedStore | NeedSandboxes | NeedBlobs}
	Execute = Function{"execute", NeedStore | NeedSandboxes | NeedBlobs | NeedBus}
	Files   = Function{"files", NeedStore | NeedSandboxes | NeedBlobs}
	Install = Function{"install", NeedStore | NeedSandboxes | NeedBlobs}
	Fetch   = Function{"fetch", NeedStore | NeedSandboxes | NeedBlobs} // uploads from URLs
	// MCP serves /v1/mcp; execute_python presigns artifacts as execute does.
	MCP        = Function{"mcp", NeedStore | NeedSandboxes | NeedBlobs}
	Runs       = Function{"runs", NeedStore | NeedSandboxes | NeedBlobs | NeedBus}
	Reaper     = Function{"reaper", NeedStore | NeedSandboxes | NeedBlobs}
	Authorizer = Function{"authorizer", NeedStore}
)

// Functions lists every function, in the Makefile's order.
func Functions() []Function {
	return []Function{Start, Stop, Status, Execute, Files, Install, Fetch, MCP, Runs, Reaper, Authorizer}
}

//go:build linux

package e2blocal

import "time"

// clientID is the constant E2B still returns in the deprecated clientID field.
const clientID = "6532622b"

// sandboxBody is E2B's Sandbox (create, connect and resume responses).
type sandboxBody struct {
	TemplateID         string  `json:"templateID"`
	SandboxID          string  `json:"sandboxID"`
	ClientID           string  `json:"clientID"`
	EnvdVersion        string  `json:"envdVersion"`
	Alias              string  `json:"alias,omitempty"`
	EnvdAccessToken    string  `json:"envdAccessToken,omitempty"`
	TrafficAccessToken *string `json:"trafficAccessToken"`
	Domain             *string `json:"domain"`
}

type lifecycleBody struct {
	AutoResume bool   `json:"autoResume"`
	OnTimeout  string `json:"onTimeout"`
}

// detailBody is E2B's SandboxDetail (GET /sandboxes/{id}).
type detailBody struct {
	listedBody
	EnvdAccessToken string `json:"envdAccessToken,omitempty"`
	// TrafficAccessToken is not in E2B's SandboxDetail, which gives it
	// only on create and connect (its Sandbox schema, same name): a
	// client that lost it (a restarted service) reads it here without
	// connect's side effects (resume, a new timeout).
	TrafficAccessToken  *string        `json:"trafficAccessToken"`
	AllowInternetAccess *bool          `json:"allowInternetAccess"`
	Domain              *string        `json:"domain"`
	Network             networkRequest `json:"network"`
	Lifecycle           lifecycleBody  `json:"lifecycle"`
}

// listedBody is E2B's ListedSandbox.
type listedBody struct {
	TemplateID   string            `json:"templateID"`
	SandboxID    string            `json:"sandboxID"`
	ClientID     string            `json:"clientID"`
	Alias        string            `json:"alias,omitempty"`
	StartedAt    time.Time         `json:"startedAt"`
	EndAt        time.Time         `json:"endAt"`
	CPUCount     int               `json:"cpuCount"`
	MemoryMB     int               `json:"memoryMB"`
	DiskSizeMB   int               `json:"diskSizeMB"`
	State        string            `json:"state"`
	EnvdVersion  string            `json:"envdVersion"`
	Metadata     map[string]string `json:"metadata"`
	VolumeMounts []struct{}        `json:"volumeMounts"`
}

// metricBody is E2B's SandboxMetric.
type metricBody struct {
	Timestamp     time.Time `json:"timestamp"`
	TimestampUnix int64     `json:"timestampUnix"`
	CPUCount      int       `json:"cpuCount"`
	CPUUsedPct    float64   `json:"cpuUsedPct"`
	MemUsed       int64     `json:"memUsed"`
	MemTotal      int64     `json:"memTotal"`
	MemCache      int64     `json:"memCache"`
	DiskUsed      int64     `json:"diskUsed"`
	DiskTotal     int64     `json:"diskTotal"`
}

// newSandboxRequest covers NewSandbox (v1) and NewSandboxV2; unknown fields
// (mcp, iam, network egress rules, ...) are accepted and ignored like optional features.
type newSandboxRequest struct {
	TemplateID          string                  `json:"templateID"`
	Timeout             *int64                  `json:"timeout"`
	AutoPause           bool                    `json:"autoPause"`
	AutoResume          *struct{ Enabled bool } `json:"autoResume"`
	Secure              *bool                   `json:"secure"`
	AllowInternetAccess *bool                   `json:"allow_internet_access"`
	Network             *networkRequest         `json:"network"`
	Metadata            map[string]string       `json:"metadata"`
	EnvVars             map[string]string       `json:"envVars"`
	VolumeMounts        []struct {
		Name string `json:"name"`
		Path string `json:"path"`
	} `json:"volumeMounts"`
}

// networkRequest is the part of E2B's SandboxNetworkConfig the runtime
// acts on; egress rules are not supported and ignored.
type networkRequest struct {
	// AllowPublicTraffic false makes every port but envd's answer only
	// requests carrying the sandbox's traffic access token; E2B's default
	// is true.
	AllowPublicTraffic *bool `json:"allowPublicTraffic"`
}

type timeoutRequest struct {
	Timeout *int64 `json:"timeout"`
}

type refreshRequest struct {
	Duration *int64 `json:"duration"`
}

//go:build linux

package e2blocal

import "github.com/sessionbox/sessionbox/pkg/e2blocal/envd"

// envdVersion is advertised as envdVersion; the SDKs gate features on it,
// so it is exactly the version whose features the envd server implements.
const envdVersion = envd.Version

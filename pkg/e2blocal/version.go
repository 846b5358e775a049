package e2blocal

// envdVersion is advertised as envdVersion; the SDKs gate features on it.
const envdVersion = "0.6.4"

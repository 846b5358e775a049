package e2e

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"testing"
)

// buildWheel makes a pure-Python wheel of one module whose VALUE is value,
// with a RECORD that hashes every file, as pip expects of a real one.
func buildWheel(t *testing.T, name, version, value string) (filename string, data []byte) {
	t.Helper()
	dist := fmt.Sprintf("%s-%s.dist-info", name, version)
	files := []struct{ path, body string }{
		{name + "/__init__.py", fmt.Sprintf("VALUE = %q\n", value)},
		{dist + "/METADATA", fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: test package\n", name, version)},
		{dist + "/WHEEL", "Wheel-Version: 1.0\nGenerator: sessionbox-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
		{dist + "/top_level.txt", name + "\n"},
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record bytes.Buffer
	for _, f := range files {
		w, err := zw.Create(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.path, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	fmt.Fprintf(&record, "%s/RECORD,,\n", dist)
	w, err := zw.Create(dist + "/RECORD")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(record.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s-%s-py3-none-any.whl", name, version), buf.Bytes()
}

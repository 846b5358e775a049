//go:build linux

package kernel

import (
	"encoding/json"
	"testing"
)

func TestAppendJSONString(t *testing.T) {
	cases := []string{
		"", "plain", `quote " and \ backslash`, "tab\tnl\nret\r", "ctl \x00\x01\x1f\x7f",
		"héllo 🌍", "bad \xff\xfe utf8", "truncated \xe2\x82", "sep \u2028\u2029", "<html>&amp;</html>",
	}
	for _, s := range cases {
		enc := appendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(enc, &got); err != nil {
			t.Errorf("%q: invalid JSON %s: %v", s, enc, err)
			continue
		}
		ref, _ := json.Marshal(s)
		var want string
		_ = json.Unmarshal(ref, &want)
		if got != want {
			t.Errorf("%q: decoded %q, want %q", s, got, want)
		}
	}
}

func TestAppendBundleLine(t *testing.T) {
	bundle := `{"text/plain": "'quoted'", "text/html": "<b>", "image/png": "iVBO", "application/json": {"a": [1]}, "e2b/chart": {"type": "line"}, "application/x-custom": "c", "text/markdown": null}`
	out, err := appendBundleLine(nil, []byte(bundle), false)
	if err != nil {
		t.Fatal(err)
	}
	var l map[string]any
	if err := json.Unmarshal(out, &l); err != nil {
		t.Fatalf("line %s: %v", out, err)
	}
	if l["type"] != "result" || l["text"] != "quoted" || l["html"] != "<b>" || l["png"] != "iVBO" || l["is_main_result"] != false {
		t.Errorf("line %v", l)
	}
	if _, ok := l["markdown"]; ok {
		t.Errorf("null format kept: %v", l)
	}
	if l["json"].(map[string]any)["a"] == nil || l["chart"].(map[string]any)["type"] != "line" {
		t.Errorf("objects %v", l)
	}
	if l["extra"].(map[string]any)["application/x-custom"] != "c" {
		t.Errorf("extra %v", l["extra"])
	}
	if _, err := appendBundleLine(nil, []byte("{not json"), true); err == nil {
		t.Error("malformed bundle accepted")
	}
}

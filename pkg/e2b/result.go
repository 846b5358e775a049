package e2b

// Result is one rich output of an execution: the value of the last
// expression (IsMainResult) or something displayed. Each MIME
// representation the kernel produced has its own field.
type Result struct {
	// IsMainResult marks the value of the cell's last expression.
	IsMainResult bool `json:"is_main_result"`
	// Text is text/plain.
	Text string `json:"text,omitempty"`
	// HTML is text/html.
	HTML string `json:"html,omitempty"`
	// Markdown is text/markdown.
	Markdown string `json:"markdown,omitempty"`
	// SVG is image/svg+xml.
	SVG string `json:"svg,omitempty"`
	// PNG is image/png, base64-encoded.
	PNG string `json:"png,omitempty"`
	// JPEG is image/jpeg, base64-encoded.
	JPEG string `json:"jpeg,omitempty"`
	// PDF is application/pdf, base64-encoded.
	PDF string `json:"pdf,omitempty"`
	// LaTeX is text/latex.
	LaTeX string `json:"latex,omitempty"`
	// JSON is application/json.
	JSON any `json:"json,omitempty"`
	// JavaScript is application/javascript.
	JavaScript string `json:"javascript,omitempty"`
	// Data is e2b/data (e.g. a DataFrame).
	Data map[string]any `json:"data,omitempty"`
	// Chart is e2b/chart, a description of a matplotlib chart.
	Chart map[string]any `json:"chart,omitempty"`
	// Extra holds the remaining MIME types.
	Extra map[string]any `json:"extra,omitempty"`
}

// Formats lists the representations present, e.g. ["text", "png"].
func (r Result) Formats() []string {
	var f []string
	add := func(name string, present bool) {
		if present {
			f = append(f, name)
		}
	}
	add("text", r.Text != "")
	add("html", r.HTML != "")
	add("markdown", r.Markdown != "")
	add("svg", r.SVG != "")
	add("png", r.PNG != "")
	add("jpeg", r.JPEG != "")
	add("pdf", r.PDF != "")
	add("latex", r.LaTeX != "")
	add("json", r.JSON != nil)
	add("javascript", r.JavaScript != "")
	add("data", r.Data != nil)
	add("chart", r.Chart != nil)
	for k := range r.Extra {
		f = append(f, k)
	}
	return f
}

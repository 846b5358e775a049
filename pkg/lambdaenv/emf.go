package lambdaenv

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Metric is one value of an embedded-metric-format line.
type Metric struct {
	Name  string
	Value float64
	Unit  string // "Count", "Milliseconds", ...
}

// WriteEMF writes one CloudWatch embedded-metric-format line: a JSON object
// whose _aws envelope tells CloudWatch Logs to extract metrics in namespace
// with the given dimensions, the values sitting beside it at the top level.
// Dimension names must not collide with metric names or "_aws".
func WriteEMF(w io.Writer, t time.Time, namespace string, dims map[string]string, metrics []Metric) error {
	type metricDef struct {
		Name string `json:"Name"`
		Unit string `json:"Unit,omitempty"`
	}
	type directive struct {
		Namespace  string      `json:"Namespace"`
		Dimensions [][]string  `json:"Dimensions"`
		Metrics    []metricDef `json:"Metrics"`
	}
	doc := make(map[string]any, len(dims)+len(metrics)+1)
	names := make([]string, 0, len(dims))
	for k, v := range dims {
		names = append(names, k)
		doc[k] = v
	}
	d := directive{Namespace: namespace, Dimensions: [][]string{sortedCopy(names)}}
	for _, m := range metrics {
		if _, dup := doc[m.Name]; dup || m.Name == "_aws" {
			return fmt.Errorf("emf: metric %q collides with another field", m.Name)
		}
		d.Metrics = append(d.Metrics, metricDef{Name: m.Name, Unit: m.Unit})
		doc[m.Name] = m.Value
	}
	doc["_aws"] = map[string]any{"Timestamp": t.UnixMilli(), "CloudWatchMetrics": []directive{d}}
	line, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("emf: encode: %w", err)
	}
	if _, err := w.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("emf: write: %w", err)
	}
	return nil
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

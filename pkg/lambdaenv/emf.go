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
// Dimension names must not collide with metric names, "_aws" or the
// fields below.
//
// The line also carries "level": "FATAL" and an RFC 3339 "timestamp":
// Lambda's log-level filtering (JSON log format) keeps a line only when its
// level field is at least the function's application log level, and counts
// a line without a level, or without a valid timestamp, as INFO; a metric
// line must survive the strictest level the stack offers (FATAL), or the
// alarms built on it go silent when an operator raises the level.
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
	doc := make(map[string]any, len(dims)+len(metrics)+3)
	names := make([]string, 0, len(dims))
	for k, v := range dims {
		names = append(names, k)
		doc[k] = v
	}
	d := directive{Namespace: namespace, Dimensions: [][]string{sortedCopy(names)}}
	for _, m := range metrics {
		if _, dup := doc[m.Name]; dup || reservedEMFField[m.Name] {
			return fmt.Errorf("emf: metric %q collides with another field", m.Name)
		}
		d.Metrics = append(d.Metrics, metricDef{Name: m.Name, Unit: m.Unit})
		doc[m.Name] = m.Value
	}
	for k := range dims {
		if reservedEMFField[k] {
			return fmt.Errorf("emf: dimension %q collides with a reserved field", k)
		}
	}
	doc[emfLevelField] = EMFLevel
	doc[emfTimeField] = t.UTC().Format(time.RFC3339Nano)
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

// EMFLevel is the log level of every metric line: the most severe of
// Lambda's application log levels, so no level setting filters metrics out.
const EMFLevel = "FATAL"

const (
	emfLevelField = "level"
	emfTimeField  = "timestamp"
)

var reservedEMFField = map[string]bool{"_aws": true, emfLevelField: true, emfTimeField: true}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

//go:build linux

package kernel

import (
	"encoding/json"
	"strings"
	"testing"
)

// chartOf runs code, which shows one figure, and returns that figure's chart.
func chartOf(t *testing.T, e *testEnv, code string) map[string]any {
	t.Helper()
	r := e.run(t, "import matplotlib.pyplot as plt\nimport numpy as np\n"+code).mustNoError(t)
	var charts []map[string]any
	for _, l := range r.ofType("result") {
		if _, ok := l["png"]; !ok {
			continue
		}
		c, ok := l["chart"].(map[string]any)
		if !ok {
			t.Fatalf("figure result without a chart: %v", keys(l))
		}
		charts = append(charts, c)
	}
	if len(charts) != 1 {
		t.Fatalf("want one figure, got %d: %v", len(charts), r.lines)
	}
	return charts[0]
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// jsonEq compares got with the JSON want, as decoded values.
func jsonEq(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %s: %v", want, err)
	}
	g, _ := json.Marshal(got)
	ws, _ := json.Marshal(w)
	if string(g) != string(ws) {
		t.Errorf("%s = %s, want %s", what, g, ws)
	}
}

func elements(t *testing.T, c map[string]any) []map[string]any {
	t.Helper()
	raw, ok := c["elements"].([]any)
	if !ok {
		t.Fatalf("elements %T %v", c["elements"], c["elements"])
	}
	out := make([]map[string]any, len(raw))
	for i, e := range raw {
		out[i], _ = e.(map[string]any)
	}
	return out
}

// TestCharts: displayed figures carry E2B's chart data, one case per kind.
func TestCharts(t *testing.T) {
	t.Parallel()
	e := defaultEnv(t)
	cases := []struct {
		name  string
		code  string
		check func(t *testing.T, c map[string]any)
	}{
		{"line with two series", `
plt.plot([0, 1, 2], [0, 1, 4], label="squares")
plt.plot([0, 1, 2], [0, 1, 8])
plt.title("Growth"); plt.xlabel("Time (s)"); plt.ylabel("Size [m]")
plt.show()`, func(t *testing.T, c map[string]any) {
			jsonEq(t, "type", c["type"], `"line"`)
			jsonEq(t, "title", c["title"], `"Growth"`)
			jsonEq(t, "labels", []any{c["x_label"], c["y_label"], c["x_unit"], c["y_unit"]}, `["Time (s)", "Size [m]", "s", "m"]`)
			jsonEq(t, "scales", []any{c["x_scale"], c["y_scale"]}, `["linear", "linear"]`)
			el := elements(t, c)
			if len(el) != 2 {
				t.Fatalf("elements %v", el)
			}
			jsonEq(t, "first", el[0], `{"label": "squares", "points": [[0, 0], [1, 1], [2, 4]]}`)
			jsonEq(t, "second", el[1], `{"label": "Line 1", "points": [[0, 0], [1, 1], [2, 8]]}`)
			ticks, _ := c["x_ticks"].([]any)
			labels, _ := c["x_tick_labels"].([]any)
			if len(ticks) == 0 || len(ticks) != len(labels) {
				t.Errorf("x ticks %v labels %v", ticks, labels)
			}
		}},
		{"scatter", `
plt.scatter([1, 2, 3], [4, 5, 6], label="obs")
plt.show()`, func(t *testing.T, c map[string]any) {
			jsonEq(t, "type", c["type"], `"scatter"`)
			jsonEq(t, "title", c["title"], `null`)
			jsonEq(t, "elements", c["elements"], `[{"label": "obs", "points": [[1, 4], [2, 5], [3, 6]]}]`)
		}},
		{"bar chart with groups", `
x = np.arange(3)
fig, ax = plt.subplots()
ax.bar(x - 0.2, [1, 2, 3], 0.4, label="2023")
ax.bar(x + 0.2, [2, 3, 5], 0.4, label="2024")
ax.set_xticks(x, ["a", "b", "c"])
ax.set_title("Sales"); ax.set_ylabel("Units")
plt.show()`, func(t *testing.T, c map[string]any) {
			jsonEq(t, "type", c["type"], `"bar"`)
			jsonEq(t, "labels", []any{c["title"], c["x_label"], c["y_label"]}, `["Sales", null, "Units"]`)
			jsonEq(t, "elements", c["elements"], `[
				{"label": "a", "group": "2023", "value": 1}, {"label": "b", "group": "2023", "value": 2}, {"label": "c", "group": "2023", "value": 3},
				{"label": "a", "group": "2024", "value": 2}, {"label": "b", "group": "2024", "value": 3}, {"label": "c", "group": "2024", "value": 5}]`)
			if _, ok := c["x_ticks"]; ok {
				t.Errorf("bar charts have no ticks in E2B's shape: %v", keys(c))
			}
		}},
		{"pie", `
fig, ax = plt.subplots()
ax.pie([90, 10], labels=["No", "Yes"], startangle=90)
ax.set_title("Answers")
plt.show()`, func(t *testing.T, c map[string]any) {
			jsonEq(t, "chart", c, `{"type": "pie", "title": "Answers", "elements": [
				{"label": "No", "angle": 324, "radius": 1}, {"label": "Yes", "angle": 36, "radius": 1}]}`)
		}},
		{"box plot", `
fig, ax = plt.subplots()
ax.boxplot([[1, 2, 3, 4, 5], [2, 4, 6, 8, 10, 30]], labels=["A", "B"], patch_artist=True)
ax.set_title("Scores"); ax.set_xlabel("Class"); ax.set_ylabel("Score")
plt.show()`, func(t *testing.T, c map[string]any) {
			jsonEq(t, "type", c["type"], `"box_and_whisker"`)
			jsonEq(t, "labels", []any{c["x_label"], c["y_label"]}, `["Class", "Score"]`)
			jsonEq(t, "elements", c["elements"], `[
				{"label": "A", "min": 1, "first_quartile": 2, "median": 3, "third_quartile": 4, "max": 5, "outliers": []},
				{"label": "B", "min": 2, "first_quartile": 4.5, "median": 7, "third_quartile": 9.5, "max": 10, "outliers": [30]}]`)
		}},
		{"two subplots make a superchart", `
fig, axs = plt.subplots(1, 2)
fig.suptitle("Both")
axs[0].plot([1, 2], [3, 4]); axs[0].set_title("Left")
axs[1].scatter([1], [2]); axs[1].set_title("Right")
plt.show()`, func(t *testing.T, c map[string]any) {
			jsonEq(t, "type", c["type"], `"superchart"`)
			jsonEq(t, "title", c["title"], `"Both"`)
			el := elements(t, c)
			if len(el) != 2 {
				t.Fatalf("sub-charts %v", el)
			}
			jsonEq(t, "sub-chart kinds", []any{el[0]["type"], el[0]["title"], el[1]["type"], el[1]["title"]}, `["line", "Left", "scatter", "Right"]`)
			jsonEq(t, "left points", elements(t, el[0])[0]["points"], `[[1, 3], [2, 4]]`)
		}},
		{"datetime x axis", `
import datetime
days = [datetime.date(2024, 1, d) for d in (1, 2, 3)]
plt.plot(days, [1, 2, 3])
plt.show()`, func(t *testing.T, c map[string]any) {
			jsonEq(t, "scales", []any{c["x_scale"], c["y_scale"]}, `["datetime", "linear"]`)
			jsonEq(t, "points", elements(t, c)[0]["points"], `[["2024-01-01", 1], ["2024-01-02", 2], ["2024-01-03", 3]]`)
			ticks, _ := c["x_ticks"].([]any)
			if len(ticks) == 0 {
				t.Fatalf("no x ticks")
			}
			for _, tk := range ticks {
				if s, ok := tk.(string); !ok || !strings.HasPrefix(s, "2024-01-0") && !strings.HasPrefix(s, "2023-12-3") {
					t.Errorf("datetime tick %v is not ISO text", tk)
				}
			}
		}},
		{"log scale", `
plt.plot([1, 10, 100], [1, 100, 10000])
plt.yscale("log")
plt.show()`, func(t *testing.T, c map[string]any) {
			jsonEq(t, "scales", []any{c["x_scale"], c["y_scale"]}, `["linear", "log"]`)
		}},
		{"categorical axis", `
plt.plot(["mon", "tue", "wed"], [3, 1, 2])
plt.show()`, func(t *testing.T, c map[string]any) {
			jsonEq(t, "x", []any{c["x_scale"], c["x_ticks"], c["x_tick_labels"]}, `["categorical", [0, 1, 2], ["mon", "tue", "wed"]]`)
			jsonEq(t, "points", elements(t, c)[0]["points"], `[["mon", 3], ["tue", 1], ["wed", 2]]`)
		}},
		{"unknown", `
fig, ax = plt.subplots()
ax.add_artist(plt.Circle((0, 0), 1, fill=False))
ax.plot([0, 1], [0, 1])
ax.set_title("Circle")
plt.show()`, func(t *testing.T, c map[string]any) {
			jsonEq(t, "chart", c, `{"type": "unknown", "title": "Circle", "elements": []}`)
		}},
		{"blank figure", `
fig, ax = plt.subplots()
plt.show()`, func(t *testing.T, c map[string]any) {
			jsonEq(t, "chart", c, `{}`)
		}},
		{"NaN data becomes null", `
plt.plot([0, 1, 2], [1, float("nan"), 3])
plt.show()`, func(t *testing.T, c map[string]any) {
			jsonEq(t, "points", elements(t, c)[0]["points"], `[[0, 1], [1, null], [2, 3]]`)
		}},
		{"figure as the value", `
fig, ax = plt.subplots()
ax.plot([5, 6])
fig`, func(t *testing.T, c map[string]any) {
			jsonEq(t, "points", elements(t, c)[0]["points"], `[[0, 5], [1, 6]]`)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.check(t, chartOf(t, e, c.code))
		})
	}
}

// TestChartsOff: SESSIONBOX_CHARTS=0 in the kernel's environment turns chart data off.
func TestChartsOff(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, Config{Env: []string{"SESSIONBOX_CHARTS=0", "PATH=/usr/bin:/bin"}}, testTuning)
	r := e.run(t, "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()").mustNoError(t)
	res := r.ofType("result")
	if len(res) != 1 || res[0]["png"] == nil || res[0]["chart"] != nil {
		t.Fatalf("results %v", res)
	}
}

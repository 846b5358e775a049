package client

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// TestReadStream joins a stream's lines into the whole result (the done
// line carries only the summary) and turns a failure line into a Problem.
func TestReadStream(t *testing.T) {
	t.Parallel()
	png := &session.Result{PNG: "iVBOR"}
	cases := []struct {
		name   string
		stream string
		events []session.Event
		want   *session.ExecResult
		err    string
	}{
		{
			name: "joined",
			stream: `{"type":"start"}
{"type":"stdout","text":"a"}
{"type":"keepalive"}
{"type":"stdout","text":"b\n"}
{"type":"stderr","text":"w\n"}
{"type":"result","result":{"png":"iVBOR","isMainResult":false}}
{"type":"error","error":{"name":"ValueError","value":"bad","traceback":"tb"}}
{"type":"done","summary":{"success":false,"executionCount":3,"durationMs":7,"truncated":false,"restarted":false,"kernelRestarted":false,"timedOut":false}}
`,
			events: []session.Event{{Stdout: "a"}, {Stdout: "b\n"}, {Stderr: "w\n"}, {Result: png},
				{Error: &session.ExecError{Name: "ValueError", Value: "bad", Traceback: "tb"}}},
			want: &session.ExecResult{Stdout: "ab\n", Stderr: "w\n", Results: []session.Result{*png},
				Error: &session.ExecError{Name: "ValueError", Value: "bad", Traceback: "tb"}, ExecutionCount: 3, DurationMs: 7},
		},
		{
			name:   "nothing printed",
			stream: `{"type":"done","summary":{"success":true,"durationMs":1,"truncated":false,"restarted":false,"kernelRestarted":false,"timedOut":false}}` + "\n",
			want:   &session.ExecResult{Success: true, Results: []session.Result{}, DurationMs: 1},
		},
		{
			name:   "failed midway",
			stream: `{"type":"stdout","text":"a"}` + "\n" + `{"type":"failure","problem":{"type":"https://sessionbox.dev/problems/unavailable","title":"Upstream unavailable","status":502,"detail":"the sandbox died"}}` + "\n",
			events: []session.Event{{Stdout: "a"}},
			err:    "502 Upstream unavailable: the sandbox died",
		},
		{
			name:   "cut off",
			stream: `{"type":"stdout","text":"a"}` + "\n",
			events: []session.Event{{Stdout: "a"}},
			err:    errNoEnd.Error(),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []session.Event
			res, err := readStream(strings.NewReader(tc.stream), func(e session.Event) { got = append(got, e) })
			if !reflect.DeepEqual(got, tc.events) {
				t.Errorf("events %+v, want %+v", got, tc.events)
			}
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %s", err, tc.err)
				}
				var p *Problem
				if strings.Contains(tc.name, "failed") && !errors.As(err, &p) {
					t.Fatalf("error %T is not a *Problem", err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(res, tc.want) {
				t.Fatalf("result %+v (%v), want %+v", res, err, tc.want)
			}
		})
	}
}

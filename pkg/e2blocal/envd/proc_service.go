//go:build linux

package envd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/process"
)

const defaultKeepalive = 90 * time.Second

// processService implements process.Process.
type processService struct{ s *Server }

// keepaliveInterval reads Keepalive-Ping-Interval (seconds, fractions
// allowed); absent or invalid means envd's default.
func keepaliveInterval(h http.Header) time.Duration {
	v, err := strconv.ParseFloat(h.Get("Keepalive-Ping-Interval"), 64)
	if err != nil || v <= 0 || v > 24*3600 {
		return defaultKeepalive
	}
	return max(time.Duration(v*float64(time.Second)), 10*time.Millisecond)
}

// processTimeout reads Connect-Timeout-Ms, which bounds the process's
// lifetime (not just the request's); absent or 0 means no limit.
func processTimeout(h http.Header) (time.Duration, error) {
	v := h.Get("Connect-Timeout-Ms")
	if v == "" {
		return 0, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 {
		return 0, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("invalid Connect-Timeout-Ms %q", v))
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// DetachHeader on a Start request asks for the start event alone: the
// stream then ends, and all the output waits for the first Connect, as
// output nobody reads does. A starter that means to disconnect at once
// (a background command) would otherwise be sent, and lose, whatever the
// process prints before it goes. E2B's envd ignores the header and streams
// to the starter as ever, so the protocol is unchanged.
const DetachHeader = "Sessionbox-Detach"

func detachedStart(h http.Header) bool {
	v, err := strconv.ParseBool(h.Get(DetachHeader))
	return err == nil && v
}

func (ps *processService) Start(ctx context.Context, req *connect.Request[process.StartRequest], stream *connect.ServerStream[process.StartResponse]) error {
	if ps.s.closed() {
		return connect.NewError(connect.CodeUnavailable, errServerClosed)
	}
	timeout, err := processTimeout(req.Header())
	if err != nil {
		return err
	}
	spec, err := ps.s.buildSpec(ctx, req.Msg, timeout)
	if err != nil {
		return err
	}
	if detachedStart(req.Header()) {
		p, err := ps.s.launch(spec, nil)
		if err != nil {
			return err
		}
		start := &process.ProcessEvent{Event: &process.ProcessEvent_Start{Start: &process.ProcessEvent_StartEvent{Pid: p.pid}}}
		if err := stream.Send(&process.StartResponse{Event: start}); err != nil {
			return fmt.Errorf("send start event: %w", err)
		}
		return nil
	}
	sub := newSubscriber(ps.s.cfg.MaxOutputBytes)
	p, err := ps.s.launch(spec, sub)
	if err != nil {
		return err
	}
	defer p.unsubscribe(sub)
	return streamProcess(ctx, p, sub, keepaliveInterval(req.Header()), func(ev *process.ProcessEvent) error {
		return stream.Send(&process.StartResponse{Event: ev})
	})
}

func (ps *processService) Connect(ctx context.Context, req *connect.Request[process.ConnectRequest], stream *connect.ServerStream[process.ConnectResponse]) error {
	p, err := ps.s.procs.find(req.Msg.GetProcess())
	if err != nil {
		return err
	}
	sub := p.subscribe()
	defer p.unsubscribe(sub)
	return streamProcess(ctx, p, sub, keepaliveInterval(req.Header()), func(ev *process.ProcessEvent) error {
		return stream.Send(&process.ConnectResponse{Event: ev})
	})
}

// streamProcess sends start, then output and keepalives (a keepalive after
// each interval without other messages), then the end event. The request
// ending only detaches the stream; the process keeps running.
func streamProcess(ctx context.Context, p *proc, sub *subscriber, interval time.Duration, send func(*process.ProcessEvent) error) error {
	start := &process.ProcessEvent{Event: &process.ProcessEvent_Start{Start: &process.ProcessEvent_StartEvent{Pid: p.pid}}}
	if err := send(start); err != nil {
		return fmt.Errorf("send start event: %w", err)
	}
	keepalive := &process.ProcessEvent{Event: &process.ProcessEvent_Keepalive{Keepalive: &process.ProcessEvent_KeepAlive{}}}
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		events := sub.take()
		for _, ev := range events {
			if err := send(ev); err != nil {
				return fmt.Errorf("send process event: %w", err)
			}
			if ev.GetEnd() != nil {
				return nil
			}
		}
		if len(events) > 0 {
			timer.Reset(interval)
		}
		select {
		case <-sub.notify:
		case <-timer.C:
			if err := send(keepalive); err != nil {
				return fmt.Errorf("send keepalive: %w", err)
			}
			timer.Reset(interval)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (ps *processService) List(context.Context, *connect.Request[process.ListRequest]) (*connect.Response[process.ListResponse], error) {
	resp := &process.ListResponse{}
	for _, p := range ps.s.procs.running() {
		resp.Processes = append(resp.Processes, &process.ProcessInfo{Config: p.config, Pid: p.pid, Tag: p.tag})
	}
	return connect.NewResponse(resp), nil
}

func (ps *processService) Update(_ context.Context, req *connect.Request[process.UpdateRequest]) (*connect.Response[process.UpdateResponse], error) {
	p, err := ps.s.procs.findRunning(req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if req.Msg.Pty != nil {
		if err := p.resize(req.Msg.GetPty().GetSize()); err != nil {
			return nil, err
		}
	}
	return connect.NewResponse(&process.UpdateResponse{}), nil
}

func (ps *processService) SendInput(ctx context.Context, req *connect.Request[process.SendInputRequest]) (*connect.Response[process.SendInputResponse], error) {
	p, err := ps.s.procs.findRunning(req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if err := writeProcessInput(ctx, p, req.Msg.GetInput()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&process.SendInputResponse{}), nil
}

func writeProcessInput(ctx context.Context, p *proc, in *process.ProcessInput) error {
	switch v := in.GetInput().(type) {
	case *process.ProcessInput_Stdin:
		return p.writeInput(ctx, v.Stdin, false)
	case *process.ProcessInput_Pty:
		return p.writeInput(ctx, v.Pty, true)
	default:
		return connect.NewError(connect.CodeInvalidArgument, errors.New("input (stdin or pty) is required"))
	}
}

// StreamInput takes a start event naming the process, then input chunks.
func (ps *processService) StreamInput(ctx context.Context, stream *connect.ClientStream[process.StreamInputRequest]) (*connect.Response[process.StreamInputResponse], error) {
	var p *proc
	for stream.Receive() {
		switch ev := stream.Msg().GetEvent().(type) {
		case *process.StreamInputRequest_Start:
			found, err := ps.s.procs.findRunning(ev.Start.GetProcess())
			if err != nil {
				return nil, err
			}
			p = found
		case *process.StreamInputRequest_Data:
			if p == nil {
				return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("the first StreamInput message must be a start event"))
			}
			if err := writeProcessInput(ctx, p, ev.Data.GetInput()); err != nil {
				return nil, err
			}
		case *process.StreamInputRequest_Keepalive:
		default:
			return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("empty StreamInput message"))
		}
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	return connect.NewResponse(&process.StreamInputResponse{}), nil
}

func (ps *processService) SendSignal(_ context.Context, req *connect.Request[process.SendSignalRequest]) (*connect.Response[process.SendSignalResponse], error) {
	p, err := ps.s.procs.findRunning(req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	var sig = sigKill
	switch req.Msg.GetSignal() {
	case process.Signal_SIGNAL_SIGKILL:
	case process.Signal_SIGNAL_SIGTERM:
		sig = sigTerm
	default:
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("unsupported signal %v: only SIGTERM and SIGKILL", req.Msg.GetSignal()))
	}
	if err := p.signal(sig); err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	return connect.NewResponse(&process.SendSignalResponse{}), nil
}

func (ps *processService) CloseStdin(_ context.Context, req *connect.Request[process.CloseStdinRequest]) (*connect.Response[process.CloseStdinResponse], error) {
	p, err := ps.s.procs.findRunning(req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if err := p.closeStdin(); err != nil {
		return nil, err
	}
	return connect.NewResponse(&process.CloseStdinResponse{}), nil
}

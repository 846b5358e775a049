// Package bus carries sessionbox's run events: EventBridge in production
// (the tenant's bus, source "sessionbox") and an in-process bus in local mode.
package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// Event source and detail types on the tenant's bus (docs/architecture.md, "Runs").
const (
	Source             = "sessionbox"
	DetailRunRequested = "Run Requested"
	DetailRunCompleted = "Run Completed"
)

// PutEventsAPI is the part of the EventBridge client the bus uses.
type PutEventsAPI interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, opts ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// EventBridge publishes run events to one event bus.
type EventBridge struct {
	client  PutEventsAPI
	busName string
}

var _ session.Bus = (*EventBridge)(nil)

// NewEventBridge publishes to the named bus.
func NewEventBridge(client PutEventsAPI, busName string) *EventBridge {
	return &EventBridge{client: client, busName: busName}
}

// PublishRunRequested puts a "Run Requested" event.
func (b *EventBridge) PublishRunRequested(ctx context.Context, e session.RunRequested) error {
	return b.put(ctx, DetailRunRequested, e)
}

// PublishRunCompleted puts a "Run Completed" event.
func (b *EventBridge) PublishRunCompleted(ctx context.Context, e session.RunCompleted) error {
	return b.put(ctx, DetailRunCompleted, e)
}

func (b *EventBridge) put(ctx context.Context, detailType string, detail any) error {
	body, err := json.Marshal(detail)
	if err != nil {
		return fmt.Errorf("encode %s: %w", detailType, err)
	}
	out, err := b.client.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{{
		EventBusName: aws.String(b.busName),
		Source:       aws.String(Source),
		DetailType:   aws.String(detailType),
		Detail:       aws.String(string(body)),
	}}})
	if err != nil {
		return &session.Error{Kind: session.ErrUnavailable, Detail: "publish " + detailType, Err: err}
	}
	// PutEvents succeeds as a call even when an entry was refused.
	if out.FailedEntryCount > 0 && len(out.Entries) > 0 {
		entry := out.Entries[0]
		return &session.Error{Kind: session.ErrUnavailable, Detail: "publish " + detailType,
			Err: errors.New(aws.ToString(entry.ErrorCode) + ": " + aws.ToString(entry.ErrorMessage))}
	}
	return nil
}

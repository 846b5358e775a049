package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// A tenant's slots are one item, so one conditional write both checks the
// cap and takes a slot:
//
//	pk = CAP#<tenant>  sk = SLOTS
//	holders   string set: every held slot (session.Slot.String), and a
//	          placeholder, since DynamoDB has no empty set
//	live      number of held slots
//	n:<principal>  number of that principal's
//
// It carries no dueShard, so it stays out of the deadline index. One item
// per tenant takes every start's slot write: DynamoDB serves ~1,000 writes
// a second on one item, far beyond a tenant's sandbox starts.
const (
	slotsSK          = "SLOTS"
	attrHolders      = "holders"
	attrLive         = "live"
	slotsPlaceholder = "-"
	// maxSlotAttempts bounds a take that keeps finding room after a
	// refused write (slots given back in between).
	maxSlotAttempts = 4
)

func slotsPK(tenant string) string { return "CAP#" + keyEscaper.Replace(tenant) }

func principalCountAttr(principal string) string { return "n:" + principal }

// TakeSlot implements session.Store.
func (s *Store) TakeSlot(ctx context.Context, tenant string, slot session.Slot, limits session.SlotLimits) (session.SlotCounts, error) {
	if err := validOwner(tenant, slot.Principal); err != nil {
		return session.SlotCounts{}, err
	}
	for range maxSlotAttempts {
		counts, err := s.takeSlot(ctx, tenant, slot, limits)
		if err == nil {
			return counts, nil
		}
		// A refused write says nothing of why (DynamoDB's reason needs
		// ReturnValuesOnConditionCheckFailure, which emulators lack), and
		// the item may not exist yet; reading it tells.
		if !errors.Is(err, session.ErrConflict) && !isAPIError(err, "ValidationException") {
			return session.SlotCounts{}, err
		}
		st, err := s.readSlots(ctx, tenant)
		if err != nil {
			return session.SlotCounts{}, err
		}
		counts = session.SlotCounts{Live: st.live, Mine: st.count[slot.Principal]}
		switch {
		case !st.exists:
			if err := s.createSlots(ctx, tenant); err != nil {
				return session.SlotCounts{}, err
			}
		case st.holders[slot.String()]:
			return counts, nil
		case st.live >= limits.Tenant:
			return session.SlotCounts{}, (*session.SlotsFullError)(&counts)
		case counts.Mine >= limits.Principal && counts.Mine != st.live:
			return session.SlotCounts{}, (*session.SlotsFullError)(&counts)
		}
	}
	return session.SlotCounts{}, &session.Error{Kind: session.ErrConflict, RetryAfter: time.Second, Detail: "store: take slot: the tenant's slots kept changing; try again"}
}

func (s *Store) takeSlot(ctx context.Context, tenant string, slot session.Slot, limits session.SlotLimits) (session.SlotCounts, error) {
	v := slot.String()
	mine := principalCountAttr(slot.Principal)
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(s.table),
		Key:              keyOf(slotsPK(tenant), slotsSK),
		UpdateExpression: aws.String("ADD #h :slot, #live :one, #mine :one"),
		// A principal alone (its count is the whole) may use the tenant's
		// cap; beside others, its share.
		ConditionExpression: aws.String("NOT contains(#h, :v) AND #live < :cap AND " +
			"(attribute_not_exists(#mine) OR #mine < :share OR #mine = #live)"),
		ExpressionAttributeNames: map[string]string{"#h": attrHolders, "#live": attrLive, "#mine": mine},
		ExpressionAttributeValues: item{
			":slot": &types.AttributeValueMemberSS{Value: []string{v}}, ":v": str(v),
			":one": num(1), ":cap": num(int64(limits.Tenant)), ":share": num(int64(limits.Principal)),
		},
		ReturnValues: types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return session.SlotCounts{}, wrapErr("take slot", err)
	}
	live, _ := strconv.Atoi(numAttr(out.Attributes, attrLive))
	n, _ := strconv.Atoi(numAttr(out.Attributes, mine))
	return session.SlotCounts{Live: live, Mine: n}, nil
}

// numAttr is a number attribute's text, empty when it is missing.
func numAttr(m item, name string) string {
	if n, ok := m[name].(*types.AttributeValueMemberN); ok {
		return n.Value
	}
	return ""
}

// createSlots writes a tenant's empty slots item unless one exists.
func (s *Store) createSlots(ctx context.Context, tenant string) error {
	m := keyOf(slotsPK(tenant), slotsSK)
	m[attrHolders] = &types.AttributeValueMemberSS{Value: []string{slotsPlaceholder}}
	m[attrLive] = num(0)
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(s.table),
		Item:                     m,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	})
	if err = wrapErr("create slots", err); errors.Is(err, session.ErrConflict) {
		return nil // a racing take made it
	}
	return err
}

// ReleaseSlot implements session.Store.
func (s *Store) ReleaseSlot(ctx context.Context, tenant string, slot session.Slot) error {
	if err := validOwner(tenant, slot.Principal); err != nil {
		return err
	}
	v := slot.String()
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      keyOf(slotsPK(tenant), slotsSK),
		UpdateExpression:         aws.String("DELETE #h :slot ADD #live :minus, #mine :minus"),
		ConditionExpression:      aws.String("contains(#h, :v)"),
		ExpressionAttributeNames: map[string]string{"#h": attrHolders, "#live": attrLive, "#mine": principalCountAttr(slot.Principal)},
		ExpressionAttributeValues: item{
			":slot": &types.AttributeValueMemberSS{Value: []string{v}}, ":v": str(v), ":minus": num(-1),
		},
	})
	err = wrapErr("release slot", err)
	if errors.Is(err, session.ErrConflict) || isAPIError(err, "ValidationException") && s.noSlots(ctx, tenant) {
		return nil // not held (or no slot ever taken)
	}
	return err
}

// noSlots reports whether the tenant has no slots item at all.
func (s *Store) noSlots(ctx context.Context, tenant string) bool {
	st, err := s.readSlots(ctx, tenant)
	return err == nil && !st.exists
}

// TenantSlots implements session.Store.
func (s *Store) TenantSlots(ctx context.Context, tenant string) ([]session.Slot, error) {
	if tenant == "" {
		return nil, session.Errorf(session.ErrInvalid, "store: tenant is required")
	}
	st, err := s.readSlots(ctx, tenant)
	if err != nil {
		return nil, err
	}
	out := make([]session.Slot, 0, len(st.holders))
	var bad []string
	for v := range st.holders {
		slot, err := session.ParseSlot(v)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s/%s: %v", slotsPK(tenant), slotsSK, err))
			continue
		}
		out = append(out, slot)
	}
	if len(bad) > 0 {
		return out, &session.SkippedRecordsError{Op: "tenant slots", Records: bad}
	}
	return out, nil
}

// slotsState is a tenant's slots item as read.
type slotsState struct {
	exists  bool
	holders map[string]bool // without the placeholder
	live    int
	count   map[string]int // by principal
}

func (s *Store) readSlots(ctx context.Context, tenant string) (slotsState, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            keyOf(slotsPK(tenant), slotsSK),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return slotsState{}, wrapErr("read slots", err)
	}
	st := slotsState{exists: len(out.Item) > 0, holders: map[string]bool{}, count: map[string]int{}}
	if set, ok := out.Item[attrHolders].(*types.AttributeValueMemberSS); ok {
		for _, v := range set.Value {
			if v != slotsPlaceholder {
				st.holders[v] = true
			}
		}
	}
	for name, av := range out.Item {
		n, ok := av.(*types.AttributeValueMemberN)
		if !ok {
			continue
		}
		v, err := strconv.Atoi(n.Value)
		if err != nil {
			return slotsState{}, fmt.Errorf("store: read slots: %s is %q: %w", name, n.Value, err)
		}
		if name == attrLive {
			st.live = v
		} else if p, ok := strings.CutPrefix(name, "n:"); ok {
			st.count[p] = v
		}
	}
	return st, nil
}

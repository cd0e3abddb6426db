package notify

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Gate limits for push requests: a receiver answers with a few bytes, and a
// slow one must not hold a worker.
const (
	GateMaxBytes = 64 << 10
	GateTimeout  = 20 * time.Second
)

// NewGate is the destination gate push requests go through: o with the
// push limits filled in where o leaves them zero. Production passes the
// zero Options plus its User-Agent; tests inject the resolver, dialer and
// trust store.
func NewGate(o gate.Options) *gate.Client {
	if o.MaxBytes == 0 {
		o.MaxBytes = GateMaxBytes
	}
	if o.Timeout == 0 {
		o.Timeout = GateTimeout
	}
	return gate.New(o)
}

// Service is what the web UI asks of notifications: the feed secret, the
// targets, the test message.
type Service struct {
	Store  *store.Store
	Sender *Sender
}

// NewService builds the Service over a gate.
func NewService(st *store.Store, baseURL string, gate Doer) *Service {
	return &Service{Store: st, Sender: &Sender{HTTP: gate, BaseURL: strings.TrimRight(baseURL, "/")}}
}

// ErrTooManyTargets refuses a target beyond MaxTargets.
var ErrTooManyTargets = errs.New(errs.Invalid, fmt.Sprintf("at most %d notification targets per Reader: remove one first", MaxTargets))

// FeedSecretPrefix starts every feed secret, so a leaked feed URL is
// recognisable.
const FeedSecretPrefix = "lecf_"

// FeedPath is the feed's path and query for a secret. The secret rides in
// the query rather than the path because request logs record the path
// without its query: a log line never holds a working feed URL.
func FeedPath(secret string) string { return "/feed.atom?key=" + url.QueryEscape(secret) }

// FeedURL is the feed's absolute URL for a secret.
func (s *Service) FeedURL(secret string) string { return s.Sender.BaseURL + FeedPath(secret) }

// NewFeedSecret makes a Reader's feed secret, replacing any before (whose
// URL stops working at once), and returns it: shown once, never stored.
func (s *Service) NewFeedSecret(ctx context.Context, readerID int64) (string, error) {
	raw, err := credential.NewSecret()
	if err != nil {
		return "", err
	}
	secret := FeedSecretPrefix + raw
	if _, err := s.Store.SetFeedSecret(ctx, readerID, credential.HashSecret(secret)); err != nil {
		return "", err
	}
	return secret, nil
}

// RevokeFeed ends a Reader's feed URL.
func (s *Service) RevokeFeed(ctx context.Context, readerID int64) error {
	return s.Store.RevokeFeedSecret(ctx, readerID)
}

// ErrNoFeed is an unknown or revoked feed secret.
var ErrNoFeed = errors.New("no such feed")

// Feed loads the feed a secret opens.
func (s *Service) Feed(ctx context.Context, secret string) (FeedInput, error) {
	if !strings.HasPrefix(secret, FeedSecretPrefix) || len(secret) > 100 {
		return FeedInput{}, ErrNoFeed
	}
	reader, fs, err := s.Store.ReaderByFeedSecret(ctx, credential.HashSecret(secret))
	if errors.Is(err, store.ErrNotFound) {
		return FeedInput{}, ErrNoFeed
	}
	if err != nil {
		return FeedInput{}, err
	}
	events, err := s.Store.FeedEntries(ctx, reader.ID, FeedLimit)
	if err != nil {
		return FeedInput{}, err
	}
	return FeedInput{BaseURL: s.Sender.BaseURL, ReaderID: reader.ID, ReaderName: reader.Name, Events: events, Since: fs.CreatedAt}, nil
}

// Created is a target just saved, with its webhook signing secret: shown
// once, then only ever sealed.
type Created struct {
	store.Target
	SigningSecret string
}

// AddTarget validates, seals and saves a Reader's target.
func (s *Service) AddTarget(ctx context.Context, readerID int64, spec TargetSpec) (Created, error) {
	e, err := ParseApprise(spec.URL)
	if err != nil {
		return Created{}, err
	}
	terms, err := spec.terms()
	if err != nil {
		return Created{}, err
	}
	shown, sealedURL, sealedSigning, signing, err := Seal(s.Sender.Box, readerID, e)
	if err != nil {
		return Created{}, err
	}
	var c Created
	err = s.Store.InTx(ctx, func(tx *store.Store) error {
		n, err := tx.CountTargets(ctx, readerID)
		if err != nil {
			return err
		}
		if n >= MaxTargets {
			return ErrTooManyTargets
		}
		c.Target, err = tx.CreateTarget(ctx, readerID, store.NewTarget{Kind: e.Service, URL: shown,
			SealedURL: sealedURL, SigningSecret: sealedSigning, TargetTerms: terms})
		return err
	})
	c.SigningSecret = signing
	return c, err
}

// SendTest sends the test message to one of a Reader's targets now,
// through the same gate as every delivery, and returns what the service
// answered.
func (s *Service) SendTest(ctx context.Context, reader store.Reader, targetID int64) (Reply, error) {
	t, err := s.Store.TargetByID(ctx, reader.ID, targetID)
	if err != nil {
		return Reply{}, err
	}
	return s.Sender.Send(ctx, t, Message{ReaderName: reader.Name, Test: true})
}

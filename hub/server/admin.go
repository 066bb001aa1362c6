package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/store"
)

// Operator is what the admin API needs: the operator's tools (hub/ops).
type Operator interface {
	Now() time.Time
	ListEvents(ctx context.Context, f ops.EventFilter) ([]ops.EventRow, error)
	ShowEvent(ctx context.Context, ref string) (ops.EventDetail, error)
	Replay(ctx context.Context, req ops.ReplayRequest) (ops.ReplayResult, error)
	Republish(ctx context.Context, f ops.RepublishFilter) (ops.RepublishResult, error)
	DeadLetters(ctx context.Context, sub string) ([]ops.DeadLetter, error)
	Redrive(ctx context.Context, sub string, id int64) (int64, error)
	Purge(ctx context.Context, cutoff time.Time, batchSize int, dryRun bool) (ops.PurgeResult, error)
	Status(ctx context.Context) (ops.Status, error)
}

// adminReplayWait bounds how long a replay request waits for the
// subscriber, below the server's write timeout; the answer reports what
// had not settled by then.
const adminReplayWait = 20 * time.Second

// mountAdmin serves the operator's tools under /admin/, behind a bearer
// token compared in constant time (of its SHA-256, so not even the length
// leaks).
func (s *Server) mountAdmin(app *fiber.App, token string, op Operator) {
	want := sha256.Sum256([]byte(token))
	admin := app.Group("/admin", func(c *fiber.Ctx) error {
		got, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
		sum := sha256.Sum256([]byte(got))
		if !ok || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="hookhub admin"`)
			return c.Status(fiber.StatusUnauthorized).JSON(errorBody{Error: "missing or wrong bearer token"})
		}
		return c.Next()
	})
	admin.Get("/status", func(c *fiber.Ctx) error {
		st, err := op.Status(c.UserContext())
		return s.adminAnswer(c, st, err)
	})
	admin.Get("/events", func(c *fiber.Ctx) error {
		f := ops.EventFilter{Provider: c.Query("provider"), Type: c.Query("type"), Limit: c.QueryInt("limit", 100)}
		var err error
		if st := c.Query("status"); st != "" {
			if f.Status, err = store.ParseStatus(st); err != nil {
				return s.adminAnswer(c, nil, invalid(err))
			}
		}
		if f.Since, f.Until, err = ops.ParseWindow(c.Query("since"), c.Query("until"), op.Now()); err != nil {
			return s.adminAnswer(c, nil, err)
		}
		rows, err := op.ListEvents(c.UserContext(), f)
		return s.adminAnswer(c, rows, err)
	})
	admin.Get("/events/:ref", func(c *fiber.Ctx) error {
		d, err := op.ShowEvent(c.UserContext(), c.Params("ref"))
		return s.adminAnswer(c, d, err)
	})
	admin.Post("/replay", func(c *fiber.Ctx) error {
		var in struct {
			Subscriber string  `json:"subscriber"`
			Since      string  `json:"since"`
			Until      string  `json:"until"`
			Subject    string  `json:"subject"`
			DryRun     bool    `json:"dry_run"`
			Rate       float64 `json:"rate"`
		}
		if err := c.BodyParser(&in); err != nil {
			return s.adminAnswer(c, nil, invalid(err))
		}
		req := ops.ReplayRequest{Subscriber: in.Subscriber, Subject: in.Subject, DryRun: in.DryRun, Rate: in.Rate, Wait: adminReplayWait}
		var err error
		if req.Since, req.Until, err = ops.ParseWindow(in.Since, in.Until, op.Now()); err != nil {
			return s.adminAnswer(c, nil, err)
		}
		res, err := op.Replay(c.UserContext(), req)
		return s.adminAnswer(c, res, err)
	})
	admin.Post("/republish", func(c *fiber.Ctx) error {
		var in struct {
			Provider string `json:"provider"`
			Status   string `json:"status"`
			Since    string `json:"since"`
			Until    string `json:"until"`
			Event    string `json:"event"`
			DryRun   bool   `json:"dry_run"`
		}
		if err := c.BodyParser(&in); err != nil {
			return s.adminAnswer(c, nil, invalid(err))
		}
		if in.Since == "" && in.Event == "" {
			return s.adminAnswer(c, nil, invalid(errors.New("give since (and optionally until) or event")))
		}
		f := ops.RepublishFilter{Provider: in.Provider, Event: in.Event, DryRun: in.DryRun}
		var err error
		if in.Status != "" {
			if f.Status, err = store.ParseStatus(in.Status); err != nil {
				return s.adminAnswer(c, nil, invalid(err))
			}
		}
		if f.Since, f.Until, err = ops.ParseWindow(in.Since, in.Until, op.Now()); err != nil {
			return s.adminAnswer(c, nil, err)
		}
		res, err := op.Republish(c.UserContext(), f)
		return s.adminAnswer(c, res, err)
	})
	admin.Get("/dlq/:subscriber", func(c *fiber.Ctx) error {
		dls, err := op.DeadLetters(c.UserContext(), c.Params("subscriber"))
		return s.adminAnswer(c, dls, err)
	})
	admin.Post("/dlq/:subscriber/redrive", func(c *fiber.Ctx) error {
		var in struct {
			ID  int64 `json:"id"`
			All bool  `json:"all"`
		}
		if err := c.BodyParser(&in); err != nil {
			return s.adminAnswer(c, nil, invalid(err))
		}
		if (in.ID > 0) == in.All {
			return s.adminAnswer(c, nil, invalid(errors.New(`give exactly one of "id" or "all": true`)))
		}
		n, err := op.Redrive(c.UserContext(), c.Params("subscriber"), in.ID)
		return s.adminAnswer(c, fiber.Map{"requested": n}, err)
	})
	admin.Post("/purge", func(c *fiber.Ctx) error {
		var in struct {
			OlderThan string `json:"older_than"`
			DryRun    bool   `json:"dry_run"`
		}
		if err := c.BodyParser(&in); err != nil {
			return s.adminAnswer(c, nil, invalid(err))
		}
		age, err := ops.ParseAge(in.OlderThan)
		if err != nil {
			return s.adminAnswer(c, nil, err)
		}
		res, err := op.Purge(c.UserContext(), op.Now().Add(-age), 5000, in.DryRun)
		return s.adminAnswer(c, res, err)
	})
}

func (s *Server) adminAnswer(c *fiber.Ctx, v any, err error) error {
	if err != nil {
		p := classify(err)
		if p.status >= 500 {
			s.cfg.Logger.Error("admin request failed", "path", c.Path(), "err", err)
		}
		return c.Status(p.status).JSON(errorBody{Error: p.message})
	}
	return c.JSON(v)
}

// invalid marks a malformed admin request (answered 400).
func invalid(err error) error { return fmt.Errorf("%w: %w", ops.ErrInvalid, err) }

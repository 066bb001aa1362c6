package admin

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubhttp"
	"github.com/hookhub/hookhub/hub/ops"
)

const (
	// replayWait bounds how long a replay request waits for the
	// subscriber, below the server's write timeout; the answer reports
	// what had not settled by then.
	replayWait = 20 * time.Second
	// replayPublish bounds the publishing of a rate-limited replay
	// request: one whose rate would take longer is refused (400) before
	// anything is published. `hub replay` has no such bound.
	replayPublish = 10 * time.Second
)

// authorized reports whether an Authorization header carries the admin
// token, compared in constant time (of its SHA-256, so not even the
// length leaks). Without an admin token nothing is authorized.
func (s *Server) authorized(authorization []byte) bool {
	if s.cfg.Token == "" {
		return false
	}
	got, ok := bearerToken(string(authorization))
	sum := sha256.Sum256([]byte(got))
	return ok && subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) == 1
}

// unauthorizedBody is the admin API's answer to a request without its
// token.
var unauthorizedBody = []byte(`{"error":"missing or wrong bearer token"}`)

// unauthorized answers a request without the admin token: 401 with a
// Bearer challenge.
func unauthorized(resp *fasthttp.Response) {
	resp.Header.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="hookhub admin"`)
	resp.Header.SetContentType(fiber.MIMEApplicationJSON)
	resp.SetStatusCode(fiber.StatusUnauthorized)
	resp.SetBody(unauthorizedBody)
}

// mountAPI serves the operator's tools under /admin/, behind a bearer
// token (authorized). On the admin listener a request without it is
// refused before its body is read (bodyLimit).
func (s *Server) mountAPI(r fiber.Router) {
	op := s.cfg.Operator
	admin := r.Group("/admin", s.authenticate)
	admin.Get("/status", func(c *fiber.Ctx) error {
		st, err := op.Status(c.UserContext())
		return s.answer(c, st, err)
	})
	admin.Get("/events", func(c *fiber.Ctx) error {
		f := ops.EventFilter{Provider: c.Query("provider"), Type: c.Query("type"), Entity: c.Query("entity"),
			Before: c.Query("before"), Limit: ops.DefaultListLimit}
		if c.Context().QueryArgs().Has("entity") {
			if err := ops.CheckEntity(f.Entity); err != nil {
				return s.answer(c, nil, err)
			}
		}
		var err error
		if l := c.Query("limit"); l != "" {
			if f.Limit, err = strconv.Atoi(l); err != nil {
				return s.answer(c, nil, &ops.InputError{Field: "limit", Reason: fmt.Sprintf("not a whole number (1..%d)", ops.MaxListLimit)})
			}
		}
		if st := c.Query("status"); st != "" {
			if f.Status, err = ops.ParseStatus("status", st); err != nil {
				return s.answer(c, nil, err)
			}
		}
		f.Now = op.Now() // taken once: "?since=7d" is exactly a payload filter's longest range
		if f.Since, f.Until, err = ops.ParseWindow(c.Query("since"), c.Query("until"), f.Now); err != nil {
			return s.answer(c, nil, err)
		}
		// Payload filters (?where=path=value, repeatable) answer a page
		// object (events, next, scanned, truncated): the page may stop at
		// its scan bound, which a bare list could not say.
		if wheres := c.Context().QueryArgs().PeekMulti("where"); len(wheres) > 0 {
			ws := make([]string, len(wheres))
			for i, w := range wheres {
				ws[i] = string(w)
			}
			if f.Where, err = ops.ParseWheres("where", ws); err != nil {
				return s.answer(c, nil, err)
			}
			page, err := op.ListEventPage(c.UserContext(), f)
			return s.answer(c, page, err)
		}
		rows, err := op.ListEvents(c.UserContext(), f)
		return s.answer(c, rows, err)
	})
	admin.Get("/events/:ref", func(c *fiber.Ctx) error {
		ref, err := pathParam(c, "ref")
		if err != nil {
			return s.answer(c, nil, err)
		}
		d, err := op.ShowEvent(c.UserContext(), ref)
		return s.answer(c, d, err)
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
		if err := s.decodeBody(c, &in); err != nil {
			return s.answer(c, nil, err)
		}
		req := ops.ReplayRequest{Subscriber: in.Subscriber, Subject: in.Subject, DryRun: in.DryRun, Rate: in.Rate,
			Wait: replayWait, PublishWithin: replayPublish}
		var err error
		if req.Since, req.Until, err = ops.ParseWindow(in.Since, in.Until, op.Now()); err != nil {
			return s.answer(c, nil, err)
		}
		res, err := op.Replay(c.UserContext(), req)
		return s.answer(c, res, err)
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
		if err := s.decodeBody(c, &in); err != nil {
			return s.answer(c, nil, err)
		}
		f := ops.RepublishFilter{Provider: in.Provider, Event: in.Event, DryRun: in.DryRun}
		var err error
		if in.Status != "" {
			if f.Status, err = ops.ParseStatus("status", in.Status); err != nil {
				return s.answer(c, nil, err)
			}
		}
		if f.Since, f.Until, err = ops.ParseWindow(in.Since, in.Until, op.Now()); err != nil {
			return s.answer(c, nil, err)
		}
		res, err := op.Republish(c.UserContext(), f)
		return s.answer(c, res, err)
	})
	// A bulk action: a plan (dry_run, the default) or a run,
	// bounded in time as a replay is (it waits replayWait for the
	// subscriber, and refuses a rate that would publish for longer than
	// replayPublish: larger runs are the console's or the CLI's).
	admin.Post("/bulk", func(c *fiber.Ctx) error {
		var in struct {
			Action     string   `json:"action"`
			Subscriber string   `json:"subscriber"`
			Provider   string   `json:"provider"`
			Type       string   `json:"type"`
			Entity     string   `json:"entity"`
			Status     string   `json:"status"`
			Since      string   `json:"since"`
			Until      string   `json:"until"`
			Where      []string `json:"where"`
			DryRun     *bool    `json:"dry_run"` // missing: a dry run
			Rate       float64  `json:"rate"`
			Sample     int      `json:"sample"`
		}
		if err := s.decodeBody(c, &in); err != nil {
			return s.answer(c, nil, err)
		}
		req := ops.BulkRequest{Action: in.Action, Subscriber: in.Subscriber, DryRun: in.DryRun == nil || *in.DryRun, Rate: in.Rate,
			Sample: in.Sample, Wait: replayWait, PublishWithin: replayPublish, Filter: ops.EventFilter{Provider: in.Provider, Type: in.Type, Entity: in.Entity}}
		var err error
		if req.Filter.Where, err = ops.ParseWheres("where", in.Where); err != nil {
			return s.answer(c, nil, err)
		}
		if in.Status != "" {
			if req.Filter.Status, err = ops.ParseStatus("status", in.Status); err != nil {
				return s.answer(c, nil, err)
			}
		}
		req.Filter.Now = op.Now() // taken once, as for /admin/events
		if req.Filter.Since, req.Filter.Until, err = ops.ParseWindow(in.Since, in.Until, req.Filter.Now); err != nil {
			return s.answer(c, nil, err)
		}
		// audit: the admin API's bulk action (actor: the token) is recorded by ops.Bulk's markers.
		res, err := op.Bulk(c.UserContext(), req)
		return s.answer(c, res, err)
	})
	admin.Get("/dlq/:subscriber", func(c *fiber.Ctx) error {
		sub, err := pathParam(c, "subscriber")
		if err != nil {
			return s.answer(c, nil, err)
		}
		dls, err := op.DeadLetters(c.UserContext(), sub)
		return s.answer(c, dls, err)
	})
	admin.Post("/dlq/:subscriber/redrive", func(c *fiber.Ctx) error {
		var in struct {
			ID  int64 `json:"id"`
			All bool  `json:"all"`
		}
		if err := s.decodeBody(c, &in); err != nil {
			return s.answer(c, nil, err)
		}
		sub, err := pathParam(c, "subscriber")
		if err != nil {
			return s.answer(c, nil, err)
		}
		res, err := op.Redrive(c.UserContext(), ops.RedriveRequest{Subscriber: sub, ID: in.ID, All: in.All})
		return s.answer(c, res, err)
	})
	s.mountAudit(admin)
	s.mountSessions(admin)
	admin.Post("/purge", func(c *fiber.Ctx) error {
		var in struct {
			OlderThan     string `json:"older_than"`
			DryRun        *bool  `json:"dry_run"` // missing: a dry run
			IncludeFailed bool   `json:"include_failed"`
		}
		if err := s.decodeBody(c, &in); err != nil {
			return s.answer(c, nil, err)
		}
		age, err := ops.ParseAge(in.OlderThan)
		if err != nil {
			return s.answer(c, nil, fmt.Errorf("older_than: %w", err))
		}
		req := ops.PurgeRequest{OlderThan: age, BatchSize: ops.DefaultPurgeBatch, DryRun: in.DryRun == nil || *in.DryRun, IncludeFailed: in.IncludeFailed}
		res, err := op.Purge(c.UserContext(), req)
		out := purgeAnswer{PurgeResult: res}
		if req.DryRun {
			out.Note = `dry run: nothing was deleted; send "dry_run": false to delete`
		}
		return s.answer(c, out, err)
	})
}

// purgeAnswer is a purge's result, with a word when it was a dry run.
type purgeAnswer struct {
	ops.PurgeResult
	Note string `json:"note,omitempty"`
}

// bearerToken reads "Bearer <token>" from an Authorization header. The
// scheme is case-insensitive and followed by one or more spaces (RFC 7235).
func bearerToken(h string) (string, bool) {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimLeft(token, " ")
	return token, token != ""
}

// pathParam is a path parameter as the operator meant it: fiber leaves it
// percent-encoded (an event id with a space or a slash arrives as %20,
// %2F).
func pathParam(c *fiber.Ctx, name string) (string, error) {
	v, err := url.PathUnescape(c.Params(name))
	if err != nil {
		return "", &ops.InputError{Field: name, Reason: "bad percent-encoding in the path"}
	}
	return v, nil
}

// maxBodyErr bounds how much of a JSON error (which may quote the body)
// goes back in an answer.
const maxBodyErr = 200

// decodeBody reads a request's JSON object into v: strictly (an unknown
// field, such as a misspelt "dry_run", is an error rather than ignored),
// whatever the Content-Type (curl -d sends form-encoded), and an empty
// body as {}. The body is read within MaxBodyBytes and the webhook
// listener's body budget (Config.Bodies; the webhook listener streams
// bodies).
func (s *Server) decodeBody(c *fiber.Ctx, v any) error {
	raw, reserved, err := hubhttp.ReadBody(c, MaxBodyBytes, s.cfg.Bodies)
	defer s.cfg.Bodies.Release(reserved)
	switch {
	case errors.Is(err, hubhttp.ErrOverloaded):
		return err
	case err != nil:
		return &ops.InputError{Field: "body", Reason: err.Error()}
	}
	body := bytes.TrimSpace(raw)
	if len(body) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err = dec.Decode(v)
	if err == nil {
		if _, tokErr := dec.Token(); !errors.Is(tokErr, io.EOF) {
			err = errors.New("data after the JSON object")
		}
	}
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "json: ")
		if len(msg) > maxBodyErr {
			msg = msg[:maxBodyErr] + "…"
		}
		return &ops.InputError{Field: "body", Reason: "want one JSON object: " + strings.ToValidUTF8(msg, "?")}
	}
	return nil
}

// answer writes v as JSON, or err with its status from the hub's one
// table (hubhttp.ErrorStatus, by error code).
func (s *Server) answer(c *fiber.Ctx, v any, err error) error {
	if err != nil {
		status, msg := hubhttp.ErrorStatus(err)
		if status >= 500 {
			s.cfg.Logger.Error("admin request failed", "path", c.Path(), "err", err)
		}
		s.recordRefusal(c, status, err)
		hubhttp.SetRetryAfter(c, status, err)
		return c.Status(status).JSON(hubhttp.ErrorBody{Error: msg})
	}
	return c.JSON(v)
}

// authenticate lets through a request with the admin token, its actions
// recorded as the token's; a POST it refuses before its action is
// recorded is recorded as refused (answer). Without the token: 401,
// counted (hub_admin_unauthorized_total), not recorded.
func (s *Server) authenticate(c *fiber.Ctx) error {
	if !s.authorized(c.Request().Header.Peek(fiber.HeaderAuthorization)) {
		s.cfg.Metrics.AdminUnauthorized.Inc()
		unauthorized(c.Response())
		return nil
	}
	ctx := hub.WithActor(c.UserContext(), s.actor)
	if c.Method() == fiber.MethodPost {
		var recorded func() bool
		ctx, recorded = hub.WithAuditMark(ctx)
		c.Locals(auditMarkKey{}, recorded)
	}
	c.SetUserContext(ctx)
	return c.Next()
}

// auditMarkKey holds, in a POST's locals, whether its action is in the
// audit trail (hub.WithAuditMark).
type auditMarkKey struct{}

// refusedActions names the audit action of each POST route, for the
// refusals the API answers before the action runs.
var refusedActions = map[string]string{
	"/admin/replay":                  ops.ActionReplay,
	"/admin/republish":               ops.ActionRepublish,
	"/admin/bulk":                    ops.ActionBulk,
	"/admin/dlq/:subscriber/redrive": ops.ActionRedrive,
	"/admin/purge":                   ops.ActionPurge,
	"/admin/sessions/revoke":         ops.ActionSessionRevoke,
}

// recordRefusal records in the audit trail a POST the API refused (4xx)
// that its action did not record itself: bad input, a bound, an unknown
// name. The request is authenticated (the token's): an anonymous request
// is answered 401 before it gets here, and never recorded.
func (s *Server) recordRefusal(c *fiber.Ctx, status int, err error) {
	recorded, ok := c.Locals(auditMarkKey{}).(func() bool)
	if !ok || recorded() || !hubhttp.Refusal(status) {
		return
	}
	action, ok := refusedActions[c.Route().Path]
	if !ok {
		action = ops.ActionAdminRequest
	}
	_ = s.cfg.Operator.Refuse(c.UserContext(), action, c.Path(), nil, err)
}

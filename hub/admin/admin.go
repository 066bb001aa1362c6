package admin

import (
	"bytes"
	"context"
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
// refused before its body is read (bodyLimit). Each route reads its
// request into ops.Values (the query, the JSON body, the path's
// parameters) and decodes it with hub/ops, as the console and the command
// line do.
func (s *Server) mountAPI(r fiber.Router) {
	admin := r.Group("/admin", s.authenticate)
	for _, rt := range s.routes() {
		admin.Add(rt.method, rt.path, func(c *fiber.Ctx) error {
			v, err := s.values(c, rt.body)
			if err != nil {
				return s.answer(c, nil, err)
			}
			res, err := rt.run(c.UserContext(), v)
			if w, ok := res.(jsonlExport); ok && err == nil {
				c.Set(fiber.HeaderContentType, "application/x-ndjson")
				c.Set(fiber.HeaderContentDisposition, `attachment; filename="hookhub-audit.jsonl"`)
				c.Context().SetBodyStreamWriter(fasthttp.StreamWriter(w))
				return nil
			}
			return s.answer(c, res, err)
		})
	}
}

// route is one of the admin API's operations.
type route struct {
	method, path string
	body         ops.Fields // a POST's JSON body
	run          func(ctx context.Context, v ops.Values) (any, error)
}

func (s *Server) routes() []route {
	op := s.cfg.Operator
	get, post := fiber.MethodGet, fiber.MethodPost
	return []route{
		{get, "/status", nil, func(ctx context.Context, _ ops.Values) (any, error) { return op.Status(ctx) }},
		{get, "/events", nil, s.listEvents},
		{get, "/events/:ref", nil, func(ctx context.Context, v ops.Values) (any, error) { return op.ShowEvent(ctx, v.Get("ref")) }},
		{post, "/replay", ops.ReplayFields, func(ctx context.Context, v ops.Values) (any, error) {
			req, err := ops.DecodeReplay(v, op.Now())
			req.Wait, req.PublishWithin = replayWait, replayPublish
			return unless(err, func() (any, error) { return op.Replay(ctx, req) })
		}},
		{post, "/republish", ops.RepublishFields, func(ctx context.Context, v ops.Values) (any, error) {
			f, err := ops.DecodeRepublish(v, op.Now())
			return unless(err, func() (any, error) { return op.Republish(ctx, f) })
		}},
		// A bulk action: a plan (dry_run, the default) or a run, bounded
		// in time as a replay is (it waits replayWait for the subscriber,
		// and refuses a rate that would publish for longer than
		// replayPublish: larger runs are the console's or the CLI's). Its
		// audit entry (actor: the token) is ops.Bulk's.
		{post, "/bulk", ops.BulkFields, func(ctx context.Context, v ops.Values) (any, error) {
			req, err := ops.DecodeBulk(v, op.Now())
			req.Wait, req.PublishWithin = replayWait, replayPublish
			return unless(err, func() (any, error) { return op.Bulk(ctx, req) })
		}},
		{get, "/dlq/:subscriber", nil, func(ctx context.Context, v ops.Values) (any, error) {
			return op.DeadLetters(ctx, v.Get("subscriber"))
		}},
		{post, "/dlq/:subscriber/redrive", ops.RedriveFields, func(ctx context.Context, v ops.Values) (any, error) {
			reqs, err := ops.DecodeRedrive(v)
			return unless(err, func() (any, error) { return op.Redrive(ctx, reqs[0]) })
		}},
		{get, "/audit", nil, s.listAudit},
		{get, "/sessions", nil, s.listSessions},
		{post, "/sessions/revoke", revokeFields, s.revokeSessions},
		{post, "/purge", ops.PurgeFields, func(ctx context.Context, v ops.Values) (any, error) {
			req, err := ops.DecodePurge(v)
			if err != nil {
				return nil, err
			}
			res, err := op.Purge(ctx, req)
			out := purgeAnswer{PurgeResult: res}
			if req.DryRun {
				out.Note = ops.DryRunNote(`send "dry_run": false to delete`)
			}
			return out, err
		}},
	}
}

// unless is run's answer, unless err refused the request first.
func unless(err error, run func() (any, error)) (any, error) {
	if err != nil {
		return nil, err
	}
	return run()
}

// listEvents answers GET /admin/events. Payload filters (?where=path=value,
// repeatable) answer a page object (events, next, scanned, truncated): the
// page may stop at its scan bound, which a bare list could not say.
func (s *Server) listEvents(ctx context.Context, v ops.Values) (any, error) {
	op := s.cfg.Operator
	f, err := ops.DecodeEventFilter(v, op.Now())
	switch {
	case err != nil:
		return nil, err
	case len(f.Where) > 0:
		return op.ListEventPage(ctx, f)
	}
	return op.ListEvents(ctx, f)
}

// values reads a request into ops.Values: its query (every value of a
// repeated name), the JSON body of a POST (strictly: only the fields of
// body, each of its kind) and the path's parameters.
func (s *Server) values(c *fiber.Ctx, body ops.Fields) (ops.Values, error) {
	v := ops.Values{}
	if body == nil {
		c.Context().QueryArgs().VisitAll(func(k, val []byte) { v.Add(string(k), string(val)) })
	} else {
		var raw map[string]json.RawMessage
		if err := s.decodeBody(c, &raw); err != nil {
			return nil, err
		}
		for name, msg := range raw {
			if err := bodyValue(v, body, name, msg); err != nil {
				return nil, err
			}
		}
	}
	for _, name := range c.Route().Params {
		p, err := pathParam(c, name)
		if err != nil {
			return nil, err
		}
		v.Set(name, p)
	}
	return v, nil
}

// kindWords says what a field of each kind wants.
var kindWords = map[ops.Kind]string{ops.Text: "a string", ops.Bool: "true or false", ops.Number: "a number", ops.Whole: "a whole number", ops.List: "an array of strings"}

// bodyValue adds the body's field name to v; null is no value.
func bodyValue(v ops.Values, fields ops.Fields, name string, msg json.RawMessage) error {
	kind, ok := fields[name]
	if !ok {
		return bodyErr(fmt.Sprintf("unknown field %q", name))
	}
	if string(msg) == "null" {
		return nil
	}
	var err error
	switch kind {
	case ops.Text:
		var t string
		err = json.Unmarshal(msg, &t)
		v.Set(name, t)
	case ops.Bool:
		var b bool
		err = json.Unmarshal(msg, &b)
		v.Set(name, strconv.FormatBool(b))
	case ops.Number: // a JSON number within float64's range, its literal kept
		var f float64
		err = json.Unmarshal(msg, &f)
		v.Set(name, string(msg))
	case ops.Whole:
		var n int64
		err = json.Unmarshal(msg, &n)
		v.Set(name, string(msg))
	case ops.List:
		var l []string
		err = json.Unmarshal(msg, &l)
		v[name] = l
	}
	if err != nil {
		return bodyErr(fmt.Sprintf("%s: want %s", name, kindWords[kind]))
	}
	return nil
}

// bodyErr is a body that is not the JSON object a route takes.
func bodyErr(msg string) error {
	if len(msg) > maxBodyErr {
		msg = msg[:maxBodyErr] + "…"
	}
	return &ops.InputError{Field: "body", Reason: "want one JSON object: " + strings.ToValidUTF8(msg, "?")}
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
		return bodyErr(strings.TrimPrefix(err.Error(), "json: "))
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

package console

import (
	"net/url"

	"github.com/gofiber/fiber/v2"

	"github.com/hookhub/hookhub/hub/ops"
)

// The entity page: every event about one entity id, newest first, across
// providers, each with what every subscriber and destination did with it
// (ops.EntityTimeline). GET /console/entity?id=cus_123[&before=CURSOR].

type entityView struct {
	ID       string // as typed, displayable
	Searched bool   // an id was given
	T        ops.Timeline
	Next     string // the next page's URL; "" on the last
	First    bool   // the newest page (no before)
}

func (cn *Console) entity(c *fiber.Ctx, s *session) error {
	render := func(code int, v entityView, msg string) error {
		title := "Entity"
		if v.ID != "" {
			title = "Entity " + v.ID
		}
		return cn.render(c, code, "entity", view{Title: title, Nav: "events", Session: s, Page: v, Error: msg})
	}
	q, err := queryValues(c)
	if err != nil {
		code, msg := failure(cn, c, err)
		return render(code, entityView{}, msg)
	}
	v := entityView{ID: displayable(q.Get("id")), Searched: q.Has("id"), First: q.Get("before") == ""}
	if !v.Searched {
		return render(fiber.StatusOK, v, "")
	}
	t, err := cn.cfg.Operator.EntityTimeline(c.UserContext(), ops.TimelineQuery{Entity: q.Get("id"), Before: q.Get("before")})
	if err != nil {
		code, msg := failure(cn, c, err)
		return render(code, v, msg)
	}
	v.T = t
	if t.Next != "" {
		v.Next = "/console/entity?" + url.Values{"id": {t.Entity}, "before": {t.Next}}.Encode()
	}
	return render(fiber.StatusOK, v, "")
}

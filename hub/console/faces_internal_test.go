package console

import (
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/ops/opstest"
)

// The console decodes its forms as the admin API and the command line
// decode theirs: the same fields through hub/ops. What is the console's
// own is its form's shape (where1 and where2, the button that runs or
// plans, the page size) and a replay's range resolved to now.
func TestConsoleDecodesAsEveryFace(t *testing.T) {
	now := time.Now()
	for i, c := range opstest.Cases {
		if c.Kind == "republish" || c.Kind == "purge" {
			continue // the console republishes one event, and does not purge
		}
		t.Run(strconv.Itoa(i)+"_"+c.Kind, func(t *testing.T) {
			form, want := url.Values{}, ops.Values{}
			for k, vs := range c.Values {
				want[k] = vs
				form[k] = vs
			}
			if ws := c.Values["where"]; len(ws) > 0 {
				delete(form, "where")
				for j, w := range ws {
					form.Set("where"+strconv.Itoa(j+1), w)
				}
			}
			run := c.Values.Get("dry_run") == "false"
			var got any
			var err error
			switch c.Kind {
			case "events":
				if !want.Has("limit") {
					want.Set("limit", strconv.Itoa(defaultPageSize))
				}
				var f ops.EventFilter
				_, f, err = parseEvents(form, now)
				f.Now = time.Time{}
				got = f
			case "replay":
				_, got, err = parseReplay(form, now, run)
				want.Set("dry_run", strconv.FormatBool(!run))
			case "bulk":
				var req ops.BulkRequest
				_, _, req, err = parseBulk(form, now, run)
				req.Filter.Now = time.Time{}
				got = req
			case "audit":
				want.Set("limit", strconv.Itoa(auditPageSize))
				_, got, err = parseAudit(form, now)
			}
			expected, wantErr := opstest.Decode(c.Kind, want, now)
			if c.Err != "" {
				require.ErrorContains(t, err, c.Err)
				require.EqualError(t, err, wantErr.Error())
				return
			}
			require.NoError(t, err)
			if r, ok := expected.(ops.ReplayRequest); ok && r.Until.IsZero() {
				r.Until = now
				expected = r
			}
			require.Equal(t, expected, got)
		})
	}
}

package admin_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/ops"
)

func (o *recordingOperator) ListEventPage(_ context.Context, f ops.EventFilter) (ops.EventPage, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pages = append(o.pages, f)
	return ops.EventPage{Truncated: true, Scanned: 20000, Next: "cursor"}, nil
}

func (o *recordingOperator) Bulk(_ context.Context, req ops.BulkRequest) (ops.BulkResult, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.bulks = append(o.bulks, req)
	return ops.BulkResult{Action: req.Action, DryRun: req.DryRun}, nil
}

// ?where= becomes the filter's payload conditions and answers a page that
// says it stopped at its scan bound; POST /admin/bulk is a dry run unless
// told otherwise, bounded in time like a replay; bad conditions are
// refused with ops' message.
func TestAdminPayloadFilterAndBulk(t *testing.T) {
	a := newAdminServer(t)
	op := a.op
	auth := "Bearer " + testAdminToken

	code, body := a.do(t, http.MethodGet, "/admin/events?since=24h&where=data.customer%3Dcus_1&where=items[0].n%3D2", auth, "", "")
	require.Equal(t, http.StatusOK, code, body)
	require.JSONEq(t, `{"events":null,"next":"cursor","scanned":20000,"truncated":true}`, body)
	require.Equal(t, []ops.PayloadMatch{{Path: "data.customer", Value: "cus_1"}, {Path: "items[0].n", Value: "2"}}, op.pages[0].Where)

	code, body = a.do(t, http.MethodGet, "/admin/events?since=24h&where=nope", auth, "", "")
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "where: \\\"nope\\\" is not path=value")

	code, body = a.do(t, http.MethodPost, "/admin/bulk", auth, "application/json",
		`{"action":"replay","subscriber":"credits","since":"2h","where":["data.customer=cus_1"]}`)
	require.Equal(t, http.StatusOK, code, body)
	require.Len(t, op.bulks, 1)
	req := op.bulks[0]
	require.True(t, req.DryRun, "a dry run unless dry_run is false")
	require.Equal(t, "credits", req.Subscriber)
	require.NotZero(t, req.PublishWithin)
	require.Equal(t, []ops.PayloadMatch{{Path: "data.customer", Value: "cus_1"}}, req.Filter.Where)

	code, _ = a.do(t, http.MethodPost, "/admin/bulk", auth, "application/json", `{"action":"replay","dry_run":false,"since":"2h"}`)
	require.Equal(t, http.StatusOK, code)
	require.False(t, op.bulks[1].DryRun)
	code, body = a.do(t, http.MethodPost, "/admin/bulk", auth, "application/json", `{"action":"replay","since":"2h","where":["a=1","a=2","a=3","a=4","a=5"]}`)
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "at most 4 payload conditions")
}

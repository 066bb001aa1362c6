package admin

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubhttp"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/ops/opstest"
)

// The admin API decodes every operator request as the console and the
// command line do: a GET's query, a POST's JSON body (each field of its
// kind), through hub/ops.
func TestAdminDecodesAsEveryFace(t *testing.T) {
	bodies := map[string]ops.Fields{"replay": ops.ReplayFields, "republish": ops.RepublishFields, "bulk": ops.BulkFields, "purge": ops.PurgeFields}
	now := time.Now()
	for i, c := range opstest.Cases {
		t.Run(strconv.Itoa(i)+"_"+c.Kind, func(t *testing.T) {
			s := &Server{cfg: Config{Bodies: hubhttp.NewBudget(1<<20, nil)}}
			fields := bodies[c.Kind]
			var got any
			var err error
			app := fiber.New()
			app.Add(fiber.MethodPost, "/r", func(ctx *fiber.Ctx) error {
				var v ops.Values
				if v, err = s.values(ctx, fields); err == nil {
					got, err = opstest.Decode(c.Kind, v, now)
				}
				return nil
			})
			req := httptest.NewRequest(fiber.MethodPost, "/r", strings.NewReader(jsonBody(t, c.Values, fields)))
			if fields == nil {
				req = httptest.NewRequest(fiber.MethodPost, "/r?"+url.Values(c.Values).Encode(), nil)
			}
			_, testErr := app.Test(req, -1)
			require.NoError(t, testErr)
			want, wantErr := opstest.Decode(c.Kind, c.Values, now)
			if c.Err != "" {
				// A value JSON cannot carry as its kind (a rate of "fast") is
				// refused as the body's; any other, as every face refuses it.
				require.ErrorContains(t, err, c.Err)
				require.Equal(t, hub.ErrorCode(wantErr), hub.ErrorCode(err))
				if !strings.Contains(err.Error(), "body: ") {
					require.EqualError(t, err, wantErr.Error())
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}

// jsonBody is v as the JSON object the admin API takes: each field of its
// kind.
func jsonBody(t *testing.T, v ops.Values, fields ops.Fields) string {
	obj := map[string]any{}
	for name, vals := range v {
		switch fields[name] {
		case ops.Bool:
			obj[name] = vals[0] == "true"
		case ops.Number, ops.Whole:
			obj[name] = json.Number(vals[0])
			if _, err := strconv.ParseFloat(vals[0], 64); err != nil {
				obj[name] = vals[0]
			}
		case ops.List:
			obj[name] = vals
		default:
			obj[name] = vals[0]
		}
	}
	b, err := json.Marshal(obj)
	require.NoError(t, err)
	return string(b)
}

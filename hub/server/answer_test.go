package server

import (
	"io"
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// TestWriteAnswerMatchesJSON checks the hand-written answer against
// fiber's c.JSON (encoding/json), byte for byte, headers included.
func TestWriteAnswerMatchesJSON(t *testing.T) {
	app := fiber.New()
	app.Get("/fast/:dup", func(c *fiber.Ctx) error {
		return writeAnswer(c, answer{EventID: c.Get("X-Id"), Idempotent: c.Params("dup") == "1"})
	})
	app.Get("/json/:dup", func(c *fiber.Ctx) error {
		return c.JSON(answer{EventID: c.Get("X-Id"), Idempotent: c.Params("dup") == "1"})
	})
	get := func(path, id string) (string, string) {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("X-Id", id)
		resp, err := app.Test(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Get("Content-Type"), string(b)
	}
	for _, id := range []string{"evt_01hv8x2a", "", "ntf_01h8441jn5pcwrfhwh78jqt8hk", `a"b`, `a\b`, "<script>", "a&b", "é", "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"} {
		for _, dup := range []string{"0", "1"} {
			fastType, fast := get("/fast/"+dup, id)
			jsonType, want := get("/json/"+dup, id)
			if fast != want || fastType != jsonType {
				t.Errorf("id %q: writeAnswer gave %s %s, c.JSON %s %s", id, fastType, fast, jsonType, want)
			}
		}
	}
}

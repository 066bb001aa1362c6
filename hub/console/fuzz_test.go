package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzConsoleForms sends arbitrary query strings and form bodies to every
// page and action that reads one, as a signed-in admin: each must answer a
// page (2xx, 3xx, 4xx, or 503 for actions that need the stream this site
// has not) and never a 500 or a panic.
func FuzzConsoleForms(f *testing.F) {
	s := newSite(f)
	ids := seed(f, s.pool, s.clock.Now(), 3, 1)
	addDeadLetter(f, s.pool, "credits", "paddle", ids[0])
	sc, csrf := s.login(adminToken)
	cookies := []*http.Cookie{sc}
	for _, seed := range []struct {
		route uint8
		input string
	}{
		{0, "provider=paddle&type=subscription.created&status=PROCESSED&since=1h&until=2030-01-01&event_id=x&limit=2"},
		{0, "before=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA&limit=10000"},
		{0, "status=%00&since=99999999999d"},
		{0, "provider=a&provider=b"},
		{1, "ref=paddle:" + ids[0]},
		{1, "ref=00000000-0000-0000-0000-000000000000"},
		{1, "ref=%ff%fe:%00"},
		{2, "subscriber=credits&flash=redrive&n=-1"},
		{2, "subscriber=credits%00"},
		{3, "subscriber=credits&id=1"},
		{3, "subscriber=credits&all=1"},
		{3, "subscriber=credits&id=9223372036854775808"},
		{4, "subscriber=credits&since=24h&subject=paddle.>"},
		{4, "subscriber=credits&since=2026-13-45&until=now"},
		{5, "subscriber=credits&since=1h&until=2h"},
		{6, "ref=paddle:" + ids[1]},
		{7, "flash=republished"},
		{8, "subscriber=credits"},
		{8, "subscriber=credits&subscriber=x"},
		{9, "ref=paddle:" + ids[0]},
		{3, "subscriber=credits&ids=1,2,3"},
		{3, "subscriber=credits&ids=,,"},
	} {
		f.Add(seed.route, seed.input)
	}
	f.Fuzz(func(t *testing.T, route uint8, input string) {
		if len(input) > 1024 {
			t.Skip("request lines past fasthttp's 4 KiB read buffer are refused before the console")
		}
		s.t = t
		var a answer
		withCSRF := input + "&csrf=" + url.QueryEscape(csrf)
		switch route % 10 {
		case 0:
			a = s.do("GET", "/console/events?"+url.PathEscape(input), "", cookies)
			a2 := s.do("GET", "/console/events?"+rawQuery(input), "", cookies)
			checkAnswer(t, a2)
		case 1:
			a = s.do("GET", "/console/event?"+rawQuery(input), "", cookies)
		case 2:
			a = s.do("GET", "/console/dead-letters?"+rawQuery(input), "", cookies)
		case 3:
			a = s.do("POST", "/console/dead-letters/redrive", withCSRF, cookies)
		case 4:
			a = s.do("POST", "/console/replay/plan", withCSRF, cookies)
		case 5:
			a = s.do("POST", "/console/replay/run", withCSRF, cookies)
		case 6:
			a = s.do("POST", "/console/event/republish", withCSRF, cookies)
		case 7:
			a = s.do("GET", "/console/?"+rawQuery(input), "", cookies)
		case 8:
			a = s.do("GET", "/console/dead-letters/redrive?"+rawQuery(input), "", cookies)
		case 9:
			a = s.do("GET", "/console/event/republish?"+rawQuery(input), "", cookies)
		}
		checkAnswer(t, a)
	})
}

func checkAnswer(t *testing.T, a answer) {
	t.Helper()
	if a.status >= 500 && a.status != http.StatusServiceUnavailable {
		t.Fatalf("answered %d: %s", a.status, a.body)
	}
	if !utf8.ValidString(a.body) {
		t.Fatalf("answered invalid UTF-8")
	}
}

// rawQuery keeps input as a query string as far as a request line can
// carry it: percent signs, including broken escapes, stay as they are;
// bytes a request line cannot hold are escaped.
func rawQuery(input string) string {
	var b strings.Builder
	for i := 0; i < len(input); i++ {
		c := input[i]
		if c <= ' ' || c == 0x7f || c == '#' || c >= 0x80 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

package schema

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
	"unicode/utf8"
)

// FormJSON returns a form body (as url.ParseQuery reads it: Twilio's) as
// a JSON object: each parameter a string, or an array of strings when
// repeated ({"CallSid":"CA…","Digits":["1","2"]}); a name that is not
// UTF-8 or holds a '%' URL-escaped ("%FF"), so names stay distinct; HTML
// not escaped. The one rule of the hub's archive and the destinations'
// envelope. The error is url.ParseQuery's (a bad escape, a ';').
func FormJSON(body []byte) ([]byte, error) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, err // its text is the reason: callers word the rest
	}
	obj := make(map[string]any, len(form))
	for name, values := range form {
		if !utf8.ValidString(name) || strings.Contains(name, "%") {
			name = url.QueryEscape(name) // holds a '%', which no other name does
		}
		if len(values) == 1 {
			obj[name] = values[0]
		} else {
			obj[name] = values
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return nil, err // not reached: strings always encode
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

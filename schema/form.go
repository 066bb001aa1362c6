package schema

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
	"unicode/utf8"
)

// FormJSON returns a form body (application/x-www-form-urlencoded, as
// url.ParseQuery reads it: Twilio's webhooks) as a JSON object of its
// parameters, names in byte order: each a string, or an array of strings
// for a repeated name, in body order ({"CallSid":"CA…","Digits":"1234"}).
// A name that is not valid UTF-8, or holds a '%', appears URL-escaped
// ("%FF"), so that distinct names stay distinct keys; a value's invalid
// UTF-8 reads as U+FFFD. HTML characters are not escaped. It is the one
// rule of both the hub's archive (the payload column) and the
// destinations' envelope, so that a destination delivers every form the
// hub accepted. The error is url.ParseQuery's (a bad escape, a ';').
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

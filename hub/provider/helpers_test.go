package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strings"
)

// Reference signers, written straight from the documented schemes and
// independent of the code under test.

// refPaddleH1 returns the hex h1 for ts and body under secret.
func refPaddleH1(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + ":"))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// refSvixV1 returns the base64 v1 signature for id, ts and body under a
// whsec_ secret.
func refSvixV1(secret, id, ts string, body []byte) string {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		panic(err)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func paddleHeader(value string) http.Header {
	h := http.Header{}
	if value != "" {
		h.Set("Paddle-Signature", value)
	}
	return h
}

func svixHeader(id, ts, sig string) http.Header {
	h := http.Header{}
	for name, v := range map[string]string{"svix-id": id, "svix-timestamp": ts, "svix-signature": sig} {
		if v != "" {
			h.Set(name, v)
		}
	}
	return h
}

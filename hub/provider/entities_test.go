package provider

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/internal/jsontext"
)

// entityKindRE is the rule on an entity's kind, written independently of
// validEntityKind.
var entityKindRE = regexp.MustCompile(`^[a-z_]{1,32}$`)

// checkEntities fails t unless list keeps the domain's rules: at most
// hub.MaxEntities, each kind [a-z_]{1,32}, each id 1 to 255 bytes of
// valid UTF-8 without control characters, no entity twice.
func checkEntities(t testing.TB, list []hub.Entity) {
	t.Helper()
	if len(list) > hub.MaxEntities {
		t.Fatalf("%d entities: %v", len(list), list)
	}
	seen := map[hub.Entity]bool{}
	for _, e := range list {
		if !entityKindRE.MatchString(e.Kind) {
			t.Fatalf("bad entity kind %q", e.Kind)
		}
		if e.ID == "" || len(e.ID) > hub.MaxEntityIDLen || !utf8.ValidString(e.ID) || strings.ContainsFunc(e.ID, unicode.IsControl) {
			t.Fatalf("bad entity id %q", e.ID)
		}
		if seen[e] {
			t.Fatalf("entity %v twice in %v", e, list)
		}
		seen[e] = true
	}
}

func ent(kind, id string) hub.Entity { return hub.Entity{Kind: kind, ID: id} }

func TestCleanEntities(t *testing.T) {
	nine := make([]hub.Entity, 0, 9)
	for i := range 9 {
		nine = append(nine, ent("customer", fmt.Sprintf("cus_%d", i)))
	}
	for _, c := range []struct {
		name     string
		in, want []hub.Entity
	}{
		{"none", nil, nil},
		{"empty", []hub.Entity{}, nil},
		{"valid", []hub.Entity{ent("customer", "cus_1"), ent("user", "user_1")}, []hub.Entity{ent("customer", "cus_1"), ent("user", "user_1")}},
		{"duplicate", []hub.Entity{ent("customer", "cus_1"), ent("customer", "cus_1"), ent("user", "cus_1")}, []hub.Entity{ent("customer", "cus_1"), ent("user", "cus_1")}},
		{"bad kinds", []hub.Entity{ent("", "a"), ent("Customer", "b"), ent("a:b", "c"), ent("a.b", "d"), ent(strings.Repeat("a", 33), "e"), ent(strings.Repeat("a", 32), "f")}, []hub.Entity{ent(strings.Repeat("a", 32), "f")}},
		{"bad ids", []hub.Entity{ent("x", ""), ent("x", "a\x00b"), ent("x", "a\nb"), ent("x", "a\x7f"), ent("x", "\xff"), ent("x", "a\u0085"), ent("x", strings.Repeat("a", 256)), ent("x", strings.Repeat("é", 127))}, []hub.Entity{ent("x", strings.Repeat("é", 127))}},
		{"bounded", nine, nine[:hub.MaxEntities]},
		{"bounded after drops", append([]hub.Entity{ent("x", "")}, nine...), nine[:hub.MaxEntities]},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := CleanEntities(c.in)
			require.Equal(t, c.want, got)
			checkEntities(t, got)
		})
	}
}

// TestEntityExtractors covers each provider's extraction on the shapes
// its samples do not: missing members, other types, nulls, expanded
// objects, huge and invalid ids, duplicates.
func TestEntityExtractors(t *testing.T) {
	huge := strings.Repeat("x", 10000)
	for _, c := range []struct {
		name string
		got  []hub.Entity
		want []hub.Entity
	}{
		{"stripe/full", stripeEntities([]byte(`{"id":"evt_1","data":{"object":{"id":"in_1","object":"invoice","customer":"cus_1","subscription":"sub_1","metadata":{"user_id":"user_1"}}}}`)),
			[]hub.Entity{ent("invoice", "in_1"), ent("customer", "cus_1"), ent("subscription", "sub_1"), ent("user", "user_1")}},
		{"stripe/checkout session", stripeEntities([]byte(`{"data":{"object":{"object":"checkout.session","id":"cs_1"}}}`)),
			[]hub.Entity{ent("checkout_session", "cs_1")}},
		{"stripe/customer is the object", stripeEntities([]byte(`{"data":{"object":{"id":"cus_1","object":"customer","customer":"cus_1"}}}`)),
			[]hub.Entity{ent("customer", "cus_1")}},
		{"stripe/expanded", stripeEntities([]byte(`{"data":{"object":{"id":"pi_1","object":"payment_intent","customer":{"id":"cus_2","object":"customer"},"subscription":{"x":1}}}}`)),
			[]hub.Entity{ent("payment_intent", "pi_1"), ent("customer", "cus_2")}},
		{"stripe/wrong types", stripeEntities([]byte(`{"data":{"object":{"id":12,"object":"charge","customer":null,"subscription":["sub_1"],"metadata":{"user_id":7}}}}`)),
			nil},
		{"stripe/no kind", stripeEntities([]byte(`{"data":{"object":{"id":"x_1","customer":"cus_1"}}}`)),
			[]hub.Entity{ent("customer", "cus_1")}},
		{"stripe/odd kind", stripeEntities([]byte(`{"data":{"object":{"id":"x_1","object":"a:b"}}}`)), nil},
		{"stripe/no data", stripeEntities([]byte(`{"id":"evt_1","type":"x"}`)), nil},
		{"stripe/data not an object", stripeEntities([]byte(`{"data":"cus_1"}`)), nil},
		{"stripe/metadata not an object", stripeEntities([]byte(`{"data":{"object":{"metadata":"user_1"}}}`)), nil},
		{"stripe/bad ids", stripeEntities([]byte(`{"data":{"object":{"id":"a\u0000b","object":"charge","customer":"` + huge + `","subscription":"sub\n","metadata":{"user_id":"u\u001f"}}}}`)), nil},
		{"stripe/invalid utf-8", stripeEntities([]byte("{\"data\":{\"object\":{\"id\":\"ch_\xff\",\"object\":\"charge\",\"customer\":\"cus_\xc3\"}}}")), nil},
		{"stripe/escaped id", stripeEntities([]byte(`{"data":{"object":{"id":"ch_\u00e9","object":"charge"}}}`)), []hub.Entity{ent("charge", "ch_é")}},
		{"stripe/truncated body", stripeEntities([]byte(`{"data":{"object":{"id":"ch_1","object":"char`)), nil},
		{"stripe/not json", stripeEntities([]byte(`nope`)), nil},

		{"paddle/subscription", paddleEntities("subscription.created", []byte(`{"data":{"id":"sub_1","customer_id":"ctm_1","transaction_id":"txn_1","custom_data":{"user_id":"user_1"}}}`)),
			[]hub.Entity{ent("subscription", "sub_1"), ent("customer", "ctm_1"), ent("transaction", "txn_1"), ent("user", "user_1")}},
		{"paddle/transaction", paddleEntities("transaction.completed", []byte(`{"data":{"id":"txn_1","customer_id":"ctm_1","subscription_id":"sub_1","custom_data":null}}`)),
			[]hub.Entity{ent("transaction", "txn_1"), ent("customer", "ctm_1"), ent("subscription", "sub_1")}},
		{"paddle/customer", paddleEntities("customer.updated", []byte(`{"data":{"id":"ctm_1"}}`)), []hub.Entity{ent("customer", "ctm_1")}},
		{"paddle/payment method", paddleEntities("payment_method.saved", []byte(`{"data":{"id":"paymtd_1","customer_id":"ctm_1"}}`)),
			[]hub.Entity{ent("payment_method", "paymtd_1"), ent("customer", "ctm_1")}},
		{"paddle/wrong types", paddleEntities("subscription.updated", []byte(`{"data":{"id":{"a":1},"customer_id":5,"subscription_id":null,"transaction_id":true,"custom_data":{"user_id":[1]}}}`)), nil},
		{"paddle/no data", paddleEntities("subscription.updated", []byte(`{"data":null}`)), nil},
		{"paddle/odd type", paddleEntities("Sub-Scription.x", []byte(`{"data":{"id":"sub_1"}}`)), []hub.Entity{ent("sub_scription", "sub_1")}},
		{"paddle/unusable type", paddleEntities("9.x", []byte(`{"data":{"id":"sub_1","customer_id":"ctm_1"}}`)), []hub.Entity{ent("customer", "ctm_1")}},

		{"clerk/user", clerkEntities("user.created", []byte(`{"data":{"id":"user_1","object":"user"},"type":"user.created"}`)), []hub.Entity{ent("user", "user_1")}},
		{"clerk/session", clerkEntities("session.created", []byte(`{"data":{"id":"sess_1","user_id":"user_1"}}`)), []hub.Entity{ent("session", "sess_1"), ent("user", "user_1")}},
		{"clerk/organization", clerkEntities("organization.updated", []byte(`{"data":{"id":"org_1","created_by":"user_1"}}`)), []hub.Entity{ent("organization", "org_1")}},
		{"clerk/membership", clerkEntities("organizationMembership.created", []byte(`{"data":{"id":"orgmem_1","organization":{"id":"org_1","name":"x"},"public_user_data":{"user_id":"user_1"}}}`)),
			[]hub.Entity{ent("organization", "org_1"), ent("user", "user_1")}},
		{"clerk/invitation", clerkEntities("organizationInvitation.created", []byte(`{"data":{"id":"orginv_1","organization_id":"org_1"}}`)), []hub.Entity{ent("organization", "org_1")}},
		{"clerk/email", clerkEntities("email.created", []byte(`{"data":{"id":"ema_1","user_id":"user_1"}}`)), []hub.Entity{ent("user", "user_1")}},
		{"clerk/wrong types", clerkEntities("organizationMembership.created", []byte(`{"data":{"id":1,"user_id":null,"organization":"org_1","public_user_data":[]}}`)), nil},
		{"clerk/deleted stub", clerkEntities("user.deleted", []byte(`{"data":{"deleted":true,"id":"user_1","object":"user"}}`)), []hub.Entity{ent("user", "user_1")}},

		{"github/pull request", githubEntities("pull_request", []byte(`{"action":"opened","number":12,"pull_request":{"number":12},"repository":{"full_name":"octo/hello"}}`)),
			[]hub.Entity{ent("repository", "octo/hello"), ent("pull_request", "octo/hello#12")}},
		{"github/issue comment", githubEntities("issue_comment", []byte(`{"issue":{"number":7},"comment":{"id":1},"repository":{"full_name":"octo/hello"}}`)),
			[]hub.Entity{ent("repository", "octo/hello"), ent("issue", "octo/hello#7")}},
		{"github/push", githubEntities("push", []byte(`{"ref":"refs/heads/main","repository":{"full_name":"octo/hello"}}`)), []hub.Entity{ent("repository", "octo/hello")}},
		{"github/no repository", githubEntities("pull_request", []byte(`{"pull_request":{"number":12}}`)), nil},
		{"github/wrong types", githubEntities("issues", []byte(`{"issue":{"number":"7"},"repository":{"full_name":5}}`)), nil},
		{"github/odd number", githubEntities("issues", []byte(`{"issue":{"number":-7},"repository":{"full_name":"a/b"}}`)), []hub.Entity{ent("repository", "a/b")}},
		{"github/fraction", githubEntities("issues", []byte(`{"issue":{"number":7.5},"repository":{"full_name":"a/b"}}`)), []hub.Entity{ent("repository", "a/b")}},
		{"github/long name", githubEntities("issues", []byte(`{"issue":{"number":7},"repository":{"full_name":"`+strings.Repeat("a", 255)+`"}}`)),
			[]hub.Entity{ent("repository", strings.Repeat("a", 255))}},

		{"shopify/order", shopifyEntities("orders/create", []byte(`{"id":1,"admin_graphql_api_id":"gid://shopify/Order/1","customer":{"id":2,"admin_graphql_api_id":"gid://shopify/Customer/2"}}`)),
			[]hub.Entity{ent("order", "gid://shopify/Order/1"), ent("customer", "gid://shopify/Customer/2")}},
		{"shopify/no gid", shopifyEntities("draft_orders/update", []byte(`{"id":1,"customer":{"id":2}}`)),
			[]hub.Entity{ent("draft_order", "gid://shopify/DraftOrder/1"), ent("customer", "gid://shopify/Customer/2")}},
		{"shopify/customer", shopifyEntities("customers/update", []byte(`{"id":2,"admin_graphql_api_id":"gid://shopify/Customer/2"}`)),
			[]hub.Entity{ent("customer", "gid://shopify/Customer/2")}},
		{"shopify/guest order", shopifyEntities("orders/paid", []byte(`{"id":1,"customer":null}`)), []hub.Entity{ent("order", "gid://shopify/Order/1")}},
		{"shopify/wrong types", shopifyEntities("orders/paid", []byte(`{"id":"1","admin_graphql_api_id":3,"customer":"cus"}`)), nil},
		{"shopify/huge id", shopifyEntities("orders/paid", []byte(`{"id":123456789012345678901234}`)), nil},
		{"shopify/odd topic", shopifyEntities("9/x", []byte(`{"id":1}`)), nil},
		{"shopify/not json", shopifyEntities("orders/paid", []byte(`<xml/>`)), nil},

		{"twilio/message", twilioEntities(url.Values{"MessageSid": {"SM1"}, "SmsSid": {"SM1"}, "AccountSid": {"AC1"}}), []hub.Entity{ent("message", "SM1")}},
		{"twilio/sms", twilioEntities(url.Values{"SmsSid": {"SM1"}}), []hub.Entity{ent("message", "SM1")}},
		{"twilio/call", twilioEntities(url.Values{"CallSid": {"CA1"}}), []hub.Entity{ent("call", "CA1")}},
		{"twilio/bad", twilioEntities(url.Values{"CallSid": {"CA\x00"}, "MessageSid": {huge}}), nil},
		{"twilio/json", twilioEntities(nil), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if len(c.want) == 0 {
				require.Empty(t, c.got)
			} else {
				require.Equal(t, c.want, c.got)
			}
			checkEntities(t, c.got)
		})
	}
}

// TestEntitiesBounded: a body that names more entities than the bound
// gives hub.MaxEntities of them, the first ones, and VerifyDelivery's
// CleanEntities keeps a provider's list within the rules whatever it is.
func TestEntitiesBounded(t *testing.T) {
	var list []hub.Entity
	for i := range 20 {
		list = addEntity(list, "customer", fmt.Sprintf("cus_%d", i))
		list = addEntity(list, "customer", fmt.Sprintf("cus_%d", i))
	}
	require.Len(t, list, hub.MaxEntities)
	require.Equal(t, "cus_7", list[hub.MaxEntities-1].ID)
	p := entityProvider{list: append(list, ent("customer", "cus_0"), ent("BAD", "x"))}
	ev, err := VerifyDelivery(p, Request{Now: time.Unix(1750000000, 0)})
	require.NoError(t, err)
	require.Equal(t, list, ev.Entities)
	p.list = []hub.Entity{ent("BAD", "x"), ent("user", "u\x00")}
	ev, err = VerifyDelivery(p, Request{Now: time.Unix(1750000000, 0)})
	require.NoError(t, err, "a bad entity never fails the delivery")
	require.Nil(t, ev.Entities)
}

// entityProvider is a Provider whose events carry list.
type entityProvider struct{ list []hub.Entity }

func (entityProvider) Name() string { return "entities" }
func (p entityProvider) Verify(Request) (Event, error) {
	return Event{ID: "evt_1", Type: "a.b", Entities: p.list}, nil
}

// sampleEntities returns the entities a sample delivery of provider name
// must carry, read from the sample's own fields with encoding/json (not
// with the code under test), by the table of docs/providers.md.
func sampleEntities(t *testing.T, name, typ string, d samples.Delivery) []hub.Entity {
	t.Helper()
	var out []hub.Entity
	add := func(kind string, id any) {
		if s, ok := id.(string); ok && s != "" {
			for _, e := range out {
				if e == ent(kind, s) {
					return
				}
			}
			out = append(out, ent(kind, s))
		}
	}
	obj := func(v any) map[string]any { m, _ := v.(map[string]any); return m }
	var body map[string]any
	if name != "twilio" {
		require.NoError(t, json.Unmarshal(d.Body, &body))
	}
	family, _, _ := strings.Cut(typ, ".")
	switch name {
	case "stripe":
		o := obj(obj(body["data"])["object"])
		add(strings.ReplaceAll(o["object"].(string), ".", "_"), o["id"])
		add("customer", o["customer"])
		add("subscription", o["subscription"])
		add("user", obj(o["metadata"])["user_id"])
	case "paddle":
		data := obj(body["data"])
		add(family, data["id"])
		add("customer", data["customer_id"])
		add("subscription", data["subscription_id"])
		add("transaction", data["transaction_id"])
		add("user", obj(data["custom_data"])["user_id"])
	case "clerk":
		data := obj(body["data"])
		switch family {
		case "user", "session", "organization":
			add(family, data["id"])
		}
		add("user", data["user_id"])
		add("organization", data["organization_id"])
	case "github":
		repo := obj(body["repository"])["full_name"].(string)
		add("repository", repo)
		number := func(v any) string { return fmt.Sprint(int64(obj(v)["number"].(float64))) }
		switch family {
		case "pull_request":
			add("pull_request", repo+"#"+number(body["pull_request"]))
		case "issues", "issue_comment":
			add("issue", repo+"#"+number(body["issue"]))
		}
	case "shopify":
		add(strings.TrimSuffix(family, "s"), body["admin_graphql_api_id"])
		add("customer", obj(body["customer"])["admin_graphql_api_id"])
	case "twilio":
		form, err := url.ParseQuery(string(d.Body))
		require.NoError(t, err)
		add("message", form.Get("MessageSid"))
		add("call", form.Get("CallSid"))
	}
	return out
}

// TestEntitiesOfSamples: every provider's samples of several types, signed
// and verified as the server does, carry the entities their own fields
// name (sampleEntities), and the API parsers (backfill) agree.
func TestEntitiesOfSamples(t *testing.T) {
	now := time.Unix(1750000000, 0)
	types := map[string][]string{
		"stripe":             {"customer.subscription.created", "customer.created", "invoice.paid", "payment_intent.succeeded", "checkout.session.completed", "charge.refunded"},
		"paddle":             {"subscription.created", "subscription.canceled", "transaction.completed", "customer.created", "adjustment.created"},
		"clerk":              {"user.created", "user.deleted", "session.created", "organization.created", "session.ended"},
		"github":             {"pull_request.opened", "issues.closed", "issue_comment.created", "push", "release.published"},
		"shopify":            {"orders.create", "customers.update", "products.update", "refunds.create"},
		"twilio":             {"message.delivered", "call.completed"},
		StandardWebhooksName: {"email.delivered", "contact.created"},
	}
	for _, name := range Names() {
		require.Contains(t, types, name, "TestEntitiesOfSamples has types for %s", name)
		for _, typ := range types[name] {
			t.Run(name+"/"+typ, func(t *testing.T) {
				p, err := New(name, []string{testSecrets[name][0]}, Options{PublicURL: testPublicURL})
				require.NoError(t, err)
				d, err := samples.New(p.(Signer), "evt_entities_1", typ, nil, now)
				require.NoError(t, err)
				ev, err := VerifyDelivery(p, Request{Header: d.Header, Body: d.Body, URI: d.Target, Now: now})
				require.NoError(t, err)
				want := sampleEntities(t, name, typ, d)
				require.Equal(t, want, ev.Entities)
				checkEntities(t, ev.Entities)
				if name != StandardWebhooksName {
					require.NotEmpty(t, ev.Entities, "%s names an entity of %s", name, typ)
				}
				var parsed Event
				switch name {
				case "stripe":
					parsed, err = StripeEvent(d.Body)
				case "paddle":
					parsed, err = PaddleEvent(d.Body)
				case "github":
					parsed, err = GitHubEvent(d.Header, d.Body)
				default:
					return
				}
				require.NoError(t, err)
				require.Equal(t, ev.Entities, parsed.Entities, "a backfilled event names the entities of its webhook")
			})
		}
	}
}

// FuzzEntities: no body makes an extractor panic, and every list keeps the
// rules.
func FuzzEntities(f *testing.F) {
	now := time.Unix(1750000000, 0)
	for name, typ := range map[string]string{"stripe": "customer.created", "paddle": "subscription.created", "clerk": "session.created", "github": "pull_request.opened", "shopify": "orders.create"} {
		body, err := samples.Body(name, "evt_1", typ, nil, now)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(typ, body)
	}
	f.Add("organizationMembership.created", []byte(`{"data":{"organization":{"id":"org_1"},"public_user_data":{"user_id":"u\u0000"}}}`))
	f.Add("x.y", []byte(`{"data":{"object":{"id":"a","object":"b","customer":{"id":"c"}}}}`))
	f.Add("issues", []byte(`{"repository":{"full_name":"a/b"},"issue":{"number":1}}`))
	f.Fuzz(func(t *testing.T, typ string, body []byte) {
		topic := strings.ReplaceAll(typ, ".", "/")
		event, _, _ := strings.Cut(typ, ".")
		form, _ := url.ParseQuery(string(body))
		for _, list := range [][]hub.Entity{
			stripeEntities(body), paddleEntities(typ, body), clerkEntities(typ, body),
			githubEntities(event, body), shopifyEntities(topic, body), twilioEntities(form),
		} {
			checkEntities(t, list)
		}
	})
}

// FuzzSkipFast: on valid JSON, skipFast ends where the validating
// skipValue does; on anything else it never panics and stays in bounds.
func FuzzSkipFast(f *testing.F) {
	for _, s := range []string{`{"a":"b\\"c","d":[1,{"e":null}]}`, `"x\\\\"`, `[]`, `12.5e3,`, `{"a":"\u00e9"}`, `"unterminated`, `{"a":[}`, `true}`} {
		f.Add([]byte(s))
	}
	body, err := samples.Body("stripe", "evt_1", "invoice.paid", nil, time.Unix(1750000000, 0))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(body)
	f.Fuzz(func(t *testing.T, data []byte) {
		end, ok := skipFast(data, 0)
		if ok && (end <= 0 || end > len(data)) {
			t.Fatalf("end %d of %d bytes", end, len(data))
		}
		if !json.Valid(data) {
			return
		}
		i := jsontext.SkipSpace(data, 0)
		want, _ := jsontext.SkipValue(data, i, 1)
		if end, ok := skipFast(data, i); !ok || end != want {
			t.Fatalf("skipFast = %d, %v; skipValue = %d on %q", end, ok, want, data)
		}
	})
}

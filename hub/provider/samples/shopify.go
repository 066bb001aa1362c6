package samples

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub/provider/internal/derive"
)

// shopifyNumber derives a Shopify-style numeric id (13 digits) from seed.
func shopifyNumber(seed string) int64 {
	n := int64(1)
	for _, c := range derive.String("shopify/"+seed, 12, "0123456789") {
		n = n*10 + int64(c-'0')
	}
	return n
}

// shopify returns the resource a Shopify topic carries (Shopify payloads
// have no envelope): an order for orders.* types, a product for
// products.*, a customer for customers.*, and a small generic object
// otherwise. Ids depend only on eventID, so the output is deterministic
// given its inputs. data, when not nil, must be valid JSON and is the
// whole body.
func shopify(eventID, eventType string, data []byte, now time.Time) ([]byte, error) {
	return sampleData("shopify", eventID, eventType, data, func() any { return shopifySampleResource(eventID, eventType, now) })
}

func shopifySampleResource(eventID, eventType string, now time.Time) any {
	ts := func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05-07:00") }
	resource, action, _ := strings.Cut(eventType, ".")
	created := now.Add(-time.Minute)
	customerID := shopifyNumber("customer/" + eventID)
	customer := map[string]any{
		"id": customerID, "email": sampleEmail(eventID), "created_at": ts(created.Add(-48 * time.Hour)),
		"updated_at": ts(now), "first_name": "Ada", "last_name": "Lovelace", "state": "enabled",
		"verified_email": true, "currency": "USD", "tags": "",
		"admin_graphql_api_id": "gid://shopify/Customer/" + strconv.FormatInt(customerID, 10),
	}
	switch resource {
	case "orders":
		id := shopifyNumber("order/" + eventID)
		var cancelledAt, cancelReason any
		financial := "paid"
		if action == "cancelled" {
			cancelledAt, cancelReason, financial = ts(now), "customer", "refunded"
		}
		return map[string]any{
			"id": id, "admin_graphql_api_id": "gid://shopify/Order/" + strconv.FormatInt(id, 10),
			"name": "#" + derive.String("ordername/"+eventID, 4, "123456789"), "order_number": 1001,
			"email": sampleEmail(eventID), "created_at": ts(created), "updated_at": ts(now),
			"processed_at": ts(created), "cancelled_at": cancelledAt, "cancel_reason": cancelReason,
			"currency": "USD", "presentment_currency": "USD", "financial_status": financial,
			"fulfillment_status": nil, "confirmed": true, "test": false,
			"subtotal_price": "10.00", "total_tax": "2.00", "total_price": "12.00", "total_discounts": "0.00",
			"token":    derive.String("token/"+eventID, 32, "0123456789abcdef"),
			"customer": customer,
			"line_items": []any{map[string]any{
				"id": shopifyNumber("line/" + eventID), "product_id": shopifyNumber("product/" + eventID),
				"variant_id": shopifyNumber("variant/" + eventID), "title": "Analytical Engine T-shirt",
				"variant_title": "M / Blue", "sku": "AE-TS-M-BLU", "quantity": 1, "price": "10.00",
				"requires_shipping": true, "taxable": true, "grams": 200, "vendor": "Analytical Engines",
			}},
			"shipping_address": map[string]any{
				"first_name": "Ada", "last_name": "Lovelace", "address1": "12 St James's Square",
				"city": "London", "zip": "SW1Y 4JH", "country": "United Kingdom", "country_code": "GB",
			},
		}
	case "products":
		id := shopifyNumber("product/" + eventID)
		return map[string]any{
			"id": id, "admin_graphql_api_id": "gid://shopify/Product/" + strconv.FormatInt(id, 10),
			"title": "Analytical Engine T-shirt", "body_html": "<p>Soft cotton, printed in London.</p>",
			"vendor": "Analytical Engines", "product_type": "Apparel", "handle": "analytical-engine-t-shirt",
			"created_at": ts(created), "updated_at": ts(now), "published_at": ts(created),
			"status": "active", "tags": "cotton, engines",
			"variants": []any{map[string]any{
				"id": shopifyNumber("variant/" + eventID), "product_id": id, "title": "M / Blue",
				"price": "10.00", "sku": "AE-TS-M-BLU", "position": 1, "inventory_policy": "deny",
				"option1": "M", "option2": "Blue", "inventory_quantity": 42, "created_at": ts(created), "updated_at": ts(now),
			}},
			"options": []any{
				map[string]any{"name": "Size", "position": 1, "values": []string{"S", "M", "L"}},
				map[string]any{"name": "Color", "position": 2, "values": []string{"Blue"}},
			},
		}
	case "customers":
		customer["orders_count"] = 1
		customer["total_spent"] = "12.00"
		customer["note"] = nil
		customer["default_address"] = map[string]any{
			"first_name": "Ada", "last_name": "Lovelace", "address1": "12 St James's Square",
			"city": "London", "zip": "SW1Y 4JH", "country": "United Kingdom", "country_code": "GB", "default": true,
		}
		return customer
	default:
		id := shopifyNumber(resource + "/" + eventID)
		kind := strings.TrimSuffix(resource, "s")
		if kind != "" && kind[0] >= 'a' && kind[0] <= 'z' {
			kind = string(kind[0]-'a'+'A') + kind[1:]
		}
		return map[string]any{
			"id": id, "admin_graphql_api_id": fmt.Sprintf("gid://shopify/%s/%d", kind, id),
			"created_at": ts(created), "updated_at": ts(now),
		}
	}
}

// Package chaos proves the hub's promise under faults.
package chaos

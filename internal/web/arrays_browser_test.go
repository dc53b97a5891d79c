package web_test

import (
	"net/http"
	"testing"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// TestDashboardArrays: an array submitted through the API is one row on
// the arrays page with its elements counted; its page lists the six
// elements, and the button ends them all in one call.
func TestDashboardArrays(t *testing.T) {
	exe := chromium(t)
	d := startDash(t, apitest.Options{})
	alice := d.User("alice", "user", "p1")
	var a v1.Array
	if code := d.Do(alice, "POST", "/v1/arrays", v1.CreateSessionRequest{Name: "sweep", Image: "sleep", Array: "0-5%2",
		Resources: map[string]string{"cpu": "1", "mem": "1g"}}, &a); code != http.StatusCreated {
		t.Fatalf("create array: %d", code)
	}

	b := newBrowser(t, exe)
	b.login(t, d.URL, alice, "alice")
	b.go_(t, "#/arrays", `document.getElementById('array-count')?.textContent === '1 arrays'`)
	b.checkLabels(t, "arrays")
	b.checkNames(t, "arrays")
	b.waitJS(t, "two running, counted", `document.querySelector('#array-rows .counts')?.textContent === '4 PENDING, 2 RUNNING'`)
	b.click(t, "open the array", `#array-rows a`)
	b.waitJS(t, "six elements", `document.querySelectorAll('#element-rows tr').length === 6`)
	b.checkLabels(t, "array")
	b.checkNames(t, "array")
	// An element's session page links back to its array.
	b.click(t, "open an element", `#element-rows a`)
	b.waitJS(t, "the element's array link", `document.getElementById('session-array')?.textContent === 'sweep'`)
	b.click(t, "back to the array", "#session-array")
	b.waitJS(t, "six elements again", `document.querySelectorAll('#element-rows tr').length === 6`)
	b.click(t, "end every element", "#remove-array")
	b.waitJS(t, "every element ended", `document.getElementById('remove-array') === null &&
		[...document.querySelectorAll('#element-rows tr')].every((r) => ['CANCELLED', 'TERMINATED'].includes(r.dataset.status))`)
}

package ui

import "github.com/relay-llm/relay/internal/controlapi"

// The view models the templ components render. Handlers build them from the
// API's models; the components know nothing of the API.

type layoutData struct {
	Title, Nav, CSRF, Nonce string
	Who                     *controlapi.Principal
}

type navGroup struct {
	Title string
	Links []navLink
}

type navLink struct{ Key, Href, Label string }

// nav is the side menu, in the order operators meet the kinds.
var nav = []navGroup{
	{"Operate", []navLink{{"overview", "/", "Overview"}, {"usage", "/usage", "Usage"}, {"breakers", "/breakers", "Breakers"}, {"audit", "/audit", "Audit log"},
		{"explain", "/explain", "Routing explain"}, {"payloads", "/payloads", "Payload captures"}}},
	{"Catalog", []navLink{{"hosts", "/hosts", "Hosts"}, {"models", "/models", "Models"}, {"bindings", "/bindings", "Bindings"},
		{"host-keys", "/host-keys", "Host keys"}, {"rate-limits", "/rate-limits", "Rate limits"}, {"policies", "/policies", "Policies"},
		{"mcp-servers", "/mcp-servers", "MCP servers"}}},
	{"Tenancy", []navLink{{"teams", "/teams", "Teams"}, {"projects", "/projects", "Projects"}, {"service-accounts", "/service-accounts", "Service accounts"},
		{"relay-keys", "/relay-keys", "Relay keys"}, {"policy-bindings", "/policy-bindings", "Policy bindings"}, {"budgets", "/budgets", "Budgets"},
		{"objects", "/objects", "Files and batches"}}},
	{"Directory", []navLink{{"users", "/users", "Users"}, {"groups", "/groups", "Groups"}, {"role-bindings", "/role-bindings", "Role bindings"}}},
}

type table struct {
	Columns []column
	Rows    []row
	Next    string // href of the next page; empty on the last
	First   string // href of the first page; empty on it
	Empty   string
}

// hasActions reports whether any row has a button (else no column for them).
func (t table) hasActions() bool {
	for _, r := range t.Rows {
		if len(r.Actions) > 0 {
			return true
		}
	}
	return false
}

type column struct {
	Title string
	Num   bool
}

type row struct {
	ID      string
	Cells   []cell
	Actions []rowAction
}

type cell struct {
	Text, Href, Badge string
	Num, Mono         bool
}

// rowAction is a button that POSTs to Href (delete, revoke).
type rowAction struct {
	Href, Label, Confirm string
	Danger               bool
}

type listView struct {
	Title, NewHref, NewLabel, CSRF string
	Href, Search, Query            string // Search: the search box's label; empty: none
	Table                          table
}

type form struct {
	Title, Action, Submit, Cancel, Error, CSRF string
	Fields                                     []field
}

// field kinds: text, number, password, secret (write-only), email, select,
// checkbox, checklist (Options with Selected meaning checked), datetime.
type field struct {
	Name, Label, Kind, Value, Help, Error string
	Checked, Required                     bool
	Options                               []option
}

type option struct {
	Value, Label string
	Selected     bool
}

type stat struct{ Label, Value string }

type overviewView struct {
	Stats        []stat
	TopModels    table
	TopProjects  table
	Breakers     table
	ShowBreakers bool
	Pacing       string // requests waiting in pacing queues now; empty: not shown
	Range        string
}

type usageView struct {
	From, To, GroupBy, CSV string
	Groups                 []option
	Stats                  []stat
	Chart                  chart
	Rows                   table
	Requests               table // the range's requests with their routes, a page
}

// chart is a server-rendered bar chart of one series.
type chart struct {
	Title  string
	Width  int
	Height int
	Bars   []chartBar
	Ticks  []chartTick
	Empty  bool
}

type chartBar struct {
	X, Y, W, H int
	Label      string
}

type chartTick struct {
	X, Y  int
	Label string
}

type mintedView struct {
	Name, Secret, Prefix string
}

type testedView struct {
	OK                       bool
	Message, Latency, Status string
}

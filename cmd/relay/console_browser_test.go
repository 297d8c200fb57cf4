package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/secret"
)

// chromium is Debian's browser; .ci/run installs it when missing.
const chromium = "/usr/bin/chromium"

// TestConsole_BrowserWalk drives the admin console in headless Chromium
// against a real relay: sign in, build a catalog on the mock upstream, mint a
// relay key, call the inference plane with it, see the call in the console,
// see its route and routing decision, revoke the key and see the next call
// refused. Screenshots of every page go
// to RELAY_CONSOLE_SCREENSHOTS (default: a temporary directory, logged).
func TestConsole_BrowserWalk(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing on CI: .ci/run installs it", chromium)
		}
		t.Skip("SKIPPING THE CONSOLE BROWSER WALK: " + chromium + " is not installed (apt-get install -y chromium)")
	}
	shots := os.Getenv("RELAY_CONSOLE_SCREENSHOTS")
	if shots == "" {
		var err error
		if shots, err = os.MkdirTemp("", "relay-console-shots-"); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("console screenshots: %s", shots)

	const email, password = "ada@example.com", "correct horse battery"
	// The catalog's host: a mock upstream of its own (a host may not point
	// at Relay's own listeners).
	upstream := httptest.NewServer(mockupstream.New(mockupstream.Options{Record: -1}))
	t.Cleanup(upstream.Close)
	p := startRelay(t, pgtest.NewDB(t), false, "RELAY_DEMO=true", "RELAY_MASTER_KEY="+secret.NewKey(),
		"RELAY_ADMIN_EMAIL="+email, "RELAY_ADMIN_PASSWORD="+password,
		// The walk opens its one plain request's page to read the whole
		// routing decision, which the ledger keeps for a sample of plain
		// successes only: here, for all of them.
		"RELAY_USAGE_DETAIL_SAMPLE=1")

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 860),
	}
	actx, cancel := chromedp.NewExecAllocator(t.Context(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	// Confirm dialogs (delete, revoke) are accepted.
	if err := chromedp.Listen(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}); err != nil {
		t.Fatal(err)
	}

	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			buf, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name+".png"), buf, 0o644)
		})
	}
	// pick chooses a select's option by its visible text.
	pick := func(sel, text string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			js := fmt.Sprintf(`(() => { const s = document.querySelector(%q); for (const o of s.options) if (o.text === %q) { s.value = o.value; return true } return false })()`, sel, text)
			ok, err := chromedp.Evaluate[bool](js)(ctx, tg)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("no option %q in %s", text, sel)
			}
			return nil
		})
	}
	submit := chromedp.Click(chromedp.CSS(`form.stack button[type=submit]`))
	cell := func(text string) chromedp.Action[chromedp.Void] {
		return chromedp.WaitVisible(fmt.Sprintf(`//td[contains(., %q)]`, text))
	}
	heading := func(text string) chromedp.Action[chromedp.Void] {
		return chromedp.WaitVisible(fmt.Sprintf(`//h1[text()=%q]`, text))
	}
	newForm := func(slug, title string) chromedp.Action[chromedp.Void] {
		return chromedp.Steps(chromedp.Navigate(p.control+"/"+slug+"/new"), heading(title))
	}
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }

	run("sign in",
		chromedp.Navigate(p.control+"/"), chromedp.WaitVisible(css(`#f-email`)), shot("sign-in"),
		chromedp.SendKeys(css(`#f-email`), email), chromedp.SendKeys(css(`#f-password`), password),
		submit, heading("Overview"))

	run("a host form with a mistake shows it in place",
		newForm("hosts", "New host"),
		chromedp.SendKeys(css(`#f-slug`), "Mock Upstream"), pick(`#f-provider`, "custom"),
		chromedp.SendKeys(css(`#f-base_url`), upstream.URL), submit,
		chromedp.WaitVisible(css(`.field.invalid .error`)), shot("form-validation-error"))
	run("create the host",
		chromedp.SetValue(css(`#f-slug`), "console-mock"), submit, cell("console-mock"), shot("hosts"))
	run("create a model",
		newForm("models", "New model"), chromedp.SendKeys(css(`#f-name`), "console-gpt"),
		chromedp.SendKeys(css(`#f-provider`), "openai"), shot("model-form"), submit, cell("console-gpt"), shot("models"))
	run("create a binding",
		newForm("bindings", "New binding"), pick(`#f-model_id`, "console-gpt"), pick(`#f-host_id`, "console-mock"),
		pick(`#f-shape`, "openai"), chromedp.SendKeys(css(`#f-upstream_model`), "gpt-4o-mini-cached"),
		chromedp.SendKeys(css(`#f-input_price`), "2.50"), chromedp.SendKeys(css(`#f-output_price`), "10"),
		chromedp.SendKeys(css(`#f-cached_input_price`), "0.25"),
		submit, cell("gpt-4o-mini"), shot("bindings"))
	run("create a host key",
		newForm("host-keys", "New host key"), pick(`#f-host_id`, "console-mock"), chromedp.SendKeys(css(`#f-slug`), "console-key"),
		chromedp.SendKeys(css(`#f-secret`), "sk-mock-console-secret"), shot("host-key-form"), submit, cell("console-key"), shot("host-keys"))
	run("create a rate limit with two rules",
		newForm("rate-limits", "New rate limit"), chromedp.SendKeys(css(`#f-slug`), "console-limit"),
		pick(`#f-rule0_meter`, "requests"), chromedp.SendKeys(css(`#f-rule0_amount`), "1000"), chromedp.SendKeys(css(`#f-rule0_window`), "60"),
		pick(`#f-rule1_meter`, "concurrency"), chromedp.SendKeys(css(`#f-rule1_amount`), "8"),
		shot("rate-limit-form"), submit, cell("console-limit"), shot("rate-limits"))
	run("create a policy that uses the rate limit",
		newForm("policies", "New policy"), chromedp.SendKeys(css(`#f-slug`), "console-policy"),
		chromedp.Click(`//label[contains(., "console-gpt")]/input`),
		chromedp.Click(`//label[contains(., "console-mock / console-key")]/input`),
		pick(`#f-rate_limit_id`, "console-limit"),
		shot("policy-form"), submit, cell("console-policy"), shot("policies"),
		chromedp.Click(`//tr[contains(., "console-policy")]//a[text()="Edit"]`),
		heading("Edit policy"), chromedp.WaitReady(`//select[@id="f-rate_limit_id"]/option[@selected and text()="console-limit"]`))
	run("create a team",
		newForm("teams", "New team"), chromedp.SendKeys(css(`#f-slug`), "console-team"), submit, cell("console-team"), shot("teams"))
	run("create a project",
		newForm("projects", "New project"), pick(`#f-team_id`, "console-team"), chromedp.SendKeys(css(`#f-slug`), "console-project"),
		submit, cell("console-project"), shot("projects"))
	run("create a service account",
		newForm("service-accounts", "New service account"), pick(`#f-project_id`, "console-team/console-project"),
		chromedp.SendKeys(css(`#f-slug`), "console-bot"), pick(`#f-policy_id`, "console-policy"),
		submit, cell("console-bot"), shot("service-accounts"))

	run("mint a relay key",
		newForm("relay-keys", "New relay key"), chromedp.SendKeys(css(`#f-name`), "console-walk"),
		pick(`#f-project_id`, "console-team/console-project"), pick(`#f-service_account_id`, "console-bot"),
		submit, chromedp.WaitVisible(css(`#minted-key`)),
		chromedp.Click(css(`[data-copy]`)), chromedp.WaitVisible(`//button[text()="Copied"]`), shot("relay-key-minted"))
	key, err := chromedp.Run(ctx, chromedp.Value(css(`#minted-key`)))
	if err != nil || !strings.HasPrefix(key, "sk-wr-") {
		t.Fatalf("the minted key on the page is %q", key)
	}

	// The snapshot picks the new rows up within its debounce.
	chat := func() int {
		req, _ := http.NewRequest("POST", p.inference+"/v1/chat/completions",
			strings.NewReader(`{"model":"console-gpt","messages":[{"role":"user","content":"Hello from the console walk"}]}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	eventually(t, p.inference, key, http.StatusOK)
	if got := chat(); got != http.StatusOK {
		t.Fatalf("a chat completion with the minted key answered %d", got)
	}

	// The usage event is written in the background; reload until it shows.
	poll.Until(t, 20*time.Second, "the request shows on the overview", func() bool {
		run("overview", chromedp.Navigate(p.control+"/"), heading("Overview"))
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`[...document.querySelectorAll("td")].filter(td => td.textContent.includes("console-gpt")).length`))
		if err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
	run("overview and usage", shot("overview"),
		chromedp.Navigate(p.control+"/usage"), chromedp.WaitVisible(css(`svg.chart rect.bar`)), cell("console-gpt"),
		cell("binding=console-mock/gpt-4o-mini"), shot("usage"),
		chromedp.Navigate(p.control+"/usage?group_by=host_key"), chromedp.WaitVisible(`//th[text()="Cache hit"]`),
		chromedp.WaitVisible(`//th[text()="Saved"]`), cell("console-key"),
		// The mock reports a share of a "cached" model's prompt as read from
		// the cache: the host key's row has a hit ratio and money saved.
		chromedp.WaitVisible(`//tr[contains(., "console-key")]/td[5][not(starts-with(normalize-space(.), "0.0 "))]`),
		chromedp.WaitVisible(`//tr[contains(., "console-key")]/td[6][normalize-space(.) != "0.00"]`), shot("usage-host-keys"),
		chromedp.Click(`//td[contains(., "binding=console-mock")]/../td[1]/a`),
		chromedp.WaitVisible(`//h2[text()="Routing decision"]`),
		chromedp.WaitVisible(`//div[contains(., "The request went to console-mock (console-gpt) with host key console-key (slot 0")]`),
		cell("chosen"), shot("request"),
		chromedp.Navigate(p.control+"/breakers"), heading("Breakers"), shot("breakers"))
	for _, slug := range []string{"policy-bindings", "budgets", "users", "groups", "role-bindings", "mcp-servers"} {
		run("list "+slug, chromedp.Navigate(p.control+"/"+slug), chromedp.WaitVisible(css(`main h1`)), shot(slug))
	}
	run("the audit log names the walk's changes",
		chromedp.Navigate(p.control+"/audit"), heading("Audit log"), pick(`#f-kind`, "rate_limits"),
		chromedp.Click(css(`form.filters button[type=submit]`)), cell("rate_limits"), shot("audit"))
	run("explain how a request with the policy would route",
		chromedp.Navigate(p.control+"/explain"), heading("Routing explain"), pick(`#f-policy_id`, "console-policy"),
		chromedp.SendKeys(css(`#f-model`), "console-gpt"), chromedp.Click(css(`form.filters button[type=submit]`)),
		chromedp.WaitVisible(`//div[contains(., "The request would go to console-mock (console-gpt) with host key console-key (slot 0")]`),
		chromedp.WaitVisible(`//th[text()="Score"]`), chromedp.WaitVisible(`//div[@class="label" and text()="Strategy"]`), shot("explain"))
	run("payload captures", chromedp.Navigate(p.control+"/payloads"), heading("Payload captures"),
		pick(`#f-project`, "console-team/console-project"), chromedp.Click(css(`form.filters button[type=submit]`)),
		chromedp.WaitVisible(`//h2[contains(., "Recent requests of console-team/console-project")]`), shot("payloads"))

	run("files and batches", chromedp.Navigate(p.control+"/objects"), heading("Files and batches"),
		pick(`#f-project`, "console-team/console-project"), chromedp.Click(css(`form.filters button[type=submit]`)),
		chromedp.WaitVisible(`//h2[contains(., "Batches of console-team/console-project")]`), shot("objects"))

	run("revoke the key",
		chromedp.Navigate(p.control+"/relay-keys"), cell("console-walk"), shot("relay-keys"),
		chromedp.Click(`//tr[contains(., "console-walk")]//button[text()="Revoke"]`),
		chromedp.WaitVisible(`//tr[contains(., "console-walk")]//span[text()="revoked"]`))
	eventually(t, p.inference, key, http.StatusUnauthorized)
	if got := chat(); got != http.StatusUnauthorized {
		t.Fatalf("a chat completion with the revoked key answered %d", got)
	}

	run("phone width", chromedp.EmulateViewport(390, 844), chromedp.Navigate(p.control+"/"),
		heading("Overview"), shot("overview-phone"))
}

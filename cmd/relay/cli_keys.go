package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/relay-llm/relay/internal/configfile"
)

const keysUsage = `relay keys mint --project TEAM/PROJECT (--service-account SLUG | --user EMAIL)
                [--name NAME] [--expires-in 720h] [--policy SLUG] [--priority N] [--url URL] [--token TOKEN]

Mints a relay key and prints it once, alone on stdout; its id and display
prefix go to stderr. The key cannot be shown again.`

// keysCmd is `relay keys mint`.
func keysCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "mint" {
		fmt.Fprintln(stderr, "usage: "+keysUsage)
		if len(args) == 0 {
			return errors.New("keys: missing subcommand (mint)")
		}
		return fmt.Errorf("keys: unknown subcommand %q (mint)", args[0])
	}
	fs := newFlagSet("keys mint", stderr)
	fs.Usage = usageFunc(fs, stderr, keysUsage)
	var (
		c                                           conn
		project, serviceAccount, user, name, policy string
		expiresIn                                   time.Duration
		priority                                    int
	)
	fs.StringVar(&project, "project", "", "the key's project, as team/project (required)")
	fs.StringVar(&serviceAccount, "service-account", "", "owner: a service account of the project, by slug")
	fs.StringVar(&user, "user", "", "owner: a user, by email")
	fs.StringVar(&name, "name", "", "a display name")
	fs.DurationVar(&expiresIn, "expires-in", 0, "lifetime, e.g. 720h (default: never expires)")
	fs.StringVar(&policy, "policy", "", "the key's own policy, by slug (default: the service account's, then the project's policy bindings)")
	fs.IntVar(&priority, "priority", 0, "overrides the policy's priority in the pacing queue (0: no override)")
	c.register(fs)
	if help, err := parseFlags(fs, args[1:]); help || err != nil {
		return err
	}
	if project == "" || (serviceAccount == "") == (user == "") {
		fs.Usage()
		return errors.New("keys mint: --project and exactly one of --service-account, --user are required")
	}
	if expiresIn < 0 {
		return errors.New("keys mint: --expires-in must be positive")
	}
	cl, err := c.admin(getenv)
	if err != nil {
		return fmt.Errorf("keys mint: %w", err)
	}
	proj, err := configfile.FindProject(ctx, cl, project)
	if err != nil {
		return fmt.Errorf("keys mint: %w", err)
	}
	body := models.RelayKeyCreate{ProjectID: proj.ID}
	owner := ""
	if serviceAccount != "" {
		sa, err := configfile.FindServiceAccount(ctx, cl, proj.ID, serviceAccount)
		if err != nil {
			return fmt.Errorf("keys mint: %w", err)
		}
		body.ServiceAccountID, owner = &sa.ID, "service account "+sa.Slug
	} else {
		u, err := configfile.FindUser(ctx, cl, user)
		if err != nil {
			return fmt.Errorf("keys mint: %w", err)
		}
		body.UserID, owner = &u.ID, "user "+string(u.Email)
	}
	if policy != "" {
		p, err := configfile.FindPolicy(ctx, cl, policy)
		if err != nil {
			return fmt.Errorf("keys mint: %w", err)
		}
		body.PolicyID = &p.ID
	}
	if name != "" {
		body.Name = &name
	}
	if expiresIn > 0 {
		at := time.Now().Add(expiresIn).UTC().Truncate(time.Second)
		body.ExpiresAt = &at
	}
	if priority != 0 {
		p := int32(priority)
		body.Priority = &p
	}
	r, err := cl.CreateRelayKeyWithResponse(ctx, body)
	if err != nil {
		return fmt.Errorf("keys mint: %w", err)
	}
	created, err := configfile.Expect(r.JSON201, r.StatusCode(), r.Body)
	if err != nil {
		return fmt.Errorf("keys mint: %w", err)
	}
	fmt.Fprintln(stdout, created.Secret)
	k := created.RelayKey
	expiry := "never expires"
	if k.ExpiresAt != nil {
		expiry = "expires " + k.ExpiresAt.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(stderr, "relay key %s (%s…) for %s in %s, %s; shown only now\n", k.ID, k.DisplayPrefix, owner, project, expiry)
	return nil
}

const tokenUsage = `relay token mint --project TEAM/PROJECT --email EMAIL [--password-stdin] [--ttl 1h] [--url URL]

Signs in as the user (password from $RELAY_PASSWORD, or one line of stdin with
--password-stdin), mints an inference token for the project and prints it
alone on stdout. The control API mints inference tokens only for a signed-in
user: the admin token has no user and cannot mint one.`

// tokenCmd is `relay token mint`.
func tokenCmd(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "mint" {
		fmt.Fprintln(stderr, "usage: "+tokenUsage)
		if len(args) == 0 {
			return errors.New("token: missing subcommand (mint)")
		}
		return fmt.Errorf("token: unknown subcommand %q (mint)", args[0])
	}
	fs := newFlagSet("token mint", stderr)
	fs.Usage = usageFunc(fs, stderr, tokenUsage)
	var (
		c              conn
		project, email string
		ttl            time.Duration
		passwordStdin  bool
	)
	fs.StringVar(&project, "project", "", "the token's project, as team/project (required)")
	fs.StringVar(&email, "email", "", "the user to sign in as (default $RELAY_EMAIL)")
	fs.BoolVar(&passwordStdin, "password-stdin", false, "read the password from the first line of stdin instead of $RELAY_PASSWORD")
	fs.DurationVar(&ttl, "ttl", time.Hour, "lifetime, 1m to 24h")
	c.register(fs)
	if help, err := parseFlags(fs, args[1:]); help || err != nil {
		return err
	}
	if project == "" {
		fs.Usage()
		return errors.New("token mint: --project is required")
	}
	if ttl < time.Minute || ttl > 24*time.Hour {
		return errors.New("token mint: --ttl must be between 1m and 24h")
	}
	if email == "" {
		email = getenv("RELAY_EMAIL")
	}
	if email == "" {
		return errors.New("token mint: inference tokens are minted for a signed-in user and the admin token has none: pass --email (password from RELAY_PASSWORD or --password-stdin)")
	}
	password := getenv("RELAY_PASSWORD")
	if passwordStdin {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("token mint: read the password: %w", err)
		}
		password = strings.TrimRight(line, "\r\n")
	}
	if password == "" {
		return errors.New("token mint: no password: set RELAY_PASSWORD or pass --password-stdin")
	}
	c.resolve(getenv)

	// A session: the cookie jar keeps relay_session; writes carry the CSRF
	// token. No bearer, so that the session is the caller.
	jar, err := cookiejar.New(nil)
	if err != nil {
		return err
	}
	hc := configfile.NewHTTPClient()
	hc.Jar = jar
	var csrf string
	cl, err := configfile.NewClient(c.url, "", hc)
	if err != nil {
		return fmt.Errorf("token mint: %w", err)
	}
	withCSRF := func(_ context.Context, r *http.Request) error {
		r.Header.Set("X-CSRF-Token", csrf)
		return nil
	}
	lr, err := cl.LoginWithResponse(ctx, models.LoginRequest{Email: models.Email(email), Password: &password})
	if err != nil {
		return fmt.Errorf("token mint: sign in: %w", err)
	}
	session, err := configfile.Expect(lr.JSON200, lr.StatusCode(), lr.Body)
	if err != nil {
		return fmt.Errorf("token mint: sign in as %s: %w", email, err)
	}
	csrf = session.CsrfToken
	defer func() {
		// End the session; the token outlives it. Best effort.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		cl.LogoutWithResponse(ctx, withCSRF)
	}()

	proj, err := configfile.FindProject(ctx, cl, project)
	if err != nil {
		return fmt.Errorf("token mint: %w", err)
	}
	secs := int32(ttl / time.Second)
	tr, err := cl.CreateInferenceTokenWithResponse(ctx, models.InferenceTokenCreate{ProjectID: proj.ID, TTLSeconds: &secs}, withCSRF)
	if err != nil {
		return fmt.Errorf("token mint: %w", err)
	}
	created, err := configfile.Expect(tr.JSON201, tr.StatusCode(), tr.Body)
	if err != nil {
		return fmt.Errorf("token mint: %w", err)
	}
	fmt.Fprintln(stdout, created.Secret)
	fmt.Fprintf(stderr, "inference token %s for %s in %s, expires %s; shown only now\n",
		created.InferenceToken.ID, email, project, created.InferenceToken.ExpiresAt.UTC().Format(time.RFC3339))
	return nil
}

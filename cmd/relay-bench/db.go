package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/credential"
	"github.com/relay-llm/relay/internal/embeddedpg"
	"github.com/relay-llm/relay/internal/migrate"
	"github.com/relay-llm/relay/internal/secret"
	"github.com/relay-llm/relay/internal/store"
)

// The bench catalog: one model with an OpenAI binding on the mock, served by
// several host keys under one policy.
const (
	benchModel = "bench-gpt"
	// stallModel is bound to an upstream model whose name asks the mock to
	// stall after the first event: Relay never forwards the caller's
	// X-Mock-Fault (it is not on any shape's allow-list), so held streams
	// through Relay name this model instead.
	stallModel = "bench-gpt-stall"
	// The same binding on the TLS mock: HTTP/2 negotiated, and HTTP/1.1.
	benchModelTLS2 = "bench-gpt-tls-h2"
	benchModelTLS1 = "bench-gpt-tls-h1"
	upstreamModel  = "gpt-4o-mini" // what the binding sends, and what direct callers name
	hostKeys       = 4
	actor          = "relay-bench"
)

// benchDB is the database a run creates on a Postgres server and drops at the end.
type benchDB struct {
	url      string       // the bench database
	name     string       // its name on the server
	created  bool         // whether name exists and is ours to drop
	admin    *store.Store // a connection to the server, to drop it
	embedded *embeddedpg.Postgres
}

// createDB creates a fresh, migrated database on serverURL, or on an
// embedded server under dir when serverURL is empty.
func createDB(ctx context.Context, serverURL, dir string) (_ *benchDB, err error) {
	db := &benchDB{name: fmt.Sprintf("relay_bench_%d_%s", time.Now().Unix(), randomHex(4))}
	defer func() {
		if err != nil {
			db.close()
		}
	}()
	if serverURL == "" {
		db.embedded, err = embeddedpg.Start(ctx, embeddedpg.Config{
			DataDir: filepath.Join(dir, "pg"),
			Logger:  slog.New(slog.DiscardHandler),
			// A throwaway cluster: durability costs time and buys nothing here.
			Settings: map[string]string{"fsync": "off", "synchronous_commit": "off"},
		})
		if err != nil {
			return nil, fmt.Errorf("start embedded postgres (or pass -database-url): %w", err)
		}
		serverURL = db.embedded.URL()
	}
	if db.admin, err = store.Open(ctx, serverURL); err != nil {
		return nil, err
	}
	if _, err = db.admin.Pool().Exec(ctx, `CREATE DATABASE "`+db.name+`"`); err != nil {
		return nil, fmt.Errorf("create bench database: %w", err)
	}
	db.created = true
	if db.url, err = withDatabase(serverURL, db.name); err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, db.url)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if err = migrate.Up(ctx, st.Pool()); err != nil {
		return nil, err
	}
	return db, nil
}

// close drops the database (ending Relay's sessions, should any be left) and
// stops the embedded server. It runs on the way out, so it has its own
// deadline rather than the run's context, which may be cancelled.
func (db *benchDB) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	if db.admin != nil {
		if db.created {
			if _, err = db.admin.Pool().Exec(ctx, `DROP DATABASE IF EXISTS "`+db.name+`" WITH (FORCE)`); err != nil {
				err = fmt.Errorf("drop bench database %s: %w", db.name, err)
			}
		}
		db.admin.Close()
	}
	if db.embedded != nil {
		if stopErr := db.embedded.Stop(ctx); stopErr != nil && err == nil {
			err = fmt.Errorf("stop embedded postgres: %w", stopErr)
		}
	}
	return err
}

// withDatabase returns server with its database replaced by name.
func withDatabase(server, name string) (string, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("database url: want postgres://user@host:port/db")
	}
	u.Path, u.RawPath = "/"+name, ""
	return u.String(), nil
}

// seed writes the bench catalog through the store, as an operator would: a
// team, a project, a policy over every model and host key, a service account
// with a relay key, the mock as a host with several sealed host keys, and
// bench-gpt bound to it with the OpenAI shape. A second service account's key
// (limited) has a policy with a never-reached rate limit, whatever limits says.
func seed(ctx context.Context, dbURL string, box *secret.Box, mocks mockURLs, limits bool) (benchKeys, error) {
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		return benchKeys{}, err
	}
	defer st.Close()
	key, limitedKey := credential.NewRelayKey(), credential.NewRelayKey()
	err = st.InTx(ctx, func(tx *store.Tx) error {
		team, err := tx.Teams().Create(ctx, actor, store.Team{Slug: "bench", Name: "Bench"})
		if err != nil {
			return err
		}
		project, err := tx.Projects().Create(ctx, actor, store.Project{TeamID: team.ID, Slug: "bench", Name: "Bench"})
		if err != nil {
			return err
		}
		if err := seedCaller(ctx, tx, project.ID, "bench", key, limits); err != nil {
			return err
		}
		if err := seedCaller(ctx, tx, project.ID, "bench-limited", limitedKey, true); err != nil {
			return err
		}
		for _, h := range []struct {
			slug, url string
			models    map[string]string // catalog name → upstream model
		}{
			{"mock", mocks.plain, map[string]string{benchModel: upstreamModel, stallModel: upstreamModel + "-fault-stall-1"}},
			{"mock-tls-h2", mocks.h2, map[string]string{benchModelTLS2: upstreamModel}},
			{"mock-tls-h1", mocks.h1, map[string]string{benchModelTLS1: upstreamModel}},
		} {
			if h.url == "" {
				continue
			}
			if err := seedHost(ctx, tx, box, h.slug, h.url, h.models); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return benchKeys{}, fmt.Errorf("seed bench catalog: %w", err)
	}
	return benchKeys{plain: key.Plaintext, limited: limitedKey.Plaintext}, nil
}

// mockURLs are the base URLs of the mocks: the plain one, and the TLS
// mock's two listeners (empty without -tls).
type mockURLs struct{ plain, h2, h1 string }

// seedHost writes a host on url with its sealed host keys, and each model
// bound to it with the OpenAI shape.
func seedHost(ctx context.Context, tx *store.Tx, box *secret.Box, slug, url string, models map[string]string) error {
	host, err := tx.Hosts().Create(ctx, actor, store.Host{
		Slug: slug, Name: "Mock upstream (" + slug + ")", Provider: "openai", BaseURL: url, Enabled: true,
		ConnectTimeoutMs: 5000, FirstByteTimeoutMs: 60000, IdleTimeoutMs: 60000, TotalTimeoutMs: 600000,
	})
	if err != nil {
		return err
	}
	for i := range hostKeys {
		sealed, err := box.Seal(fmt.Sprintf("sk-mock-bench-%d", i+1))
		if err != nil {
			return err
		}
		if _, err := tx.HostKeys().Create(ctx, actor, store.HostKey{
			HostID: host.ID, Slug: fmt.Sprintf("key-%d", i+1), SecretCiphertext: sealed, Position: int32(i), Enabled: true,
		}); err != nil {
			return err
		}
	}
	for name, up := range models {
		model, err := tx.Models().Create(ctx, actor, store.Model{
			Name: name, Kind: "chat", ContextWindow: 128000, MaxOutputTokens: 16384,
		})
		if err != nil {
			return err
		}
		if _, err = tx.Bindings().Create(ctx, actor, store.Binding{
			ModelID: model.ID, HostID: host.ID, Shape: "openai", UpstreamModel: up, Enabled: true,
			InputPrice: 150_000, OutputPrice: 600_000, PriceTiers: json.RawMessage("[]"),
		}); err != nil {
			return err
		}
	}
	return nil
}

// benchKeys are the relay keys seed made: one under the bench policy, one
// under a policy with a never-reached rate limit.
type benchKeys struct{ plain, limited string }

// seedCaller writes a policy over every model and host key (with a rate
// limit that is never reached when limited), a service account under it and
// key for that account.
func seedCaller(ctx context.Context, tx *store.Tx, projectID uuid.UUID, slug string, key credential.Minted, limited bool) error {
	pol := store.Policy{
		Slug: slug, Name: "Bench (" + slug + "): every model, every host key", AllModels: true, AllHostKeys: true,
		KeyStrategy: "round_robin", MaxAttempts: 3, LimiterFailureMode: "open",
	}
	if limited {
		// Generous enough never to refuse: the figure is the reservation's cost.
		rl, err := tx.RateLimits().Create(ctx, actor, store.RateLimit{Slug: slug, Name: "Bench: never reached"})
		if err != nil {
			return err
		}
		for _, r := range []store.RateLimitRule{
			{RateLimitID: rl.ID, Meter: "requests", Amount: 1_000_000_000, WindowSeconds: 60},
			{RateLimitID: rl.ID, Meter: "total_tokens", Amount: 1_000_000_000_000, WindowSeconds: 60},
			{RateLimitID: rl.ID, Meter: "concurrency", Amount: 100_000, WindowSeconds: 60},
		} {
			if _, err := tx.RateLimitRules().Create(ctx, actor, r); err != nil {
				return err
			}
		}
		pol.RateLimitID = &rl.ID
	}
	policy, err := tx.Policies().Create(ctx, actor, pol)
	if err != nil {
		return err
	}
	sa, err := tx.ServiceAccounts().Create(ctx, actor, store.ServiceAccount{
		ProjectID: projectID, Slug: slug, Name: "Bench load generator (" + slug + ")", PolicyID: &policy.ID,
	})
	if err != nil {
		return err
	}
	_, err = tx.RelayKeys().Create(ctx, actor, store.RelayKey{
		KeyHash: key.Hash[:], DisplayPrefix: key.DisplayPrefix, Name: slug,
		ProjectID: projectID, ServiceAccountID: &sa.ID,
	})
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b)
}

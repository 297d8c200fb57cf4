package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/relay-llm/relay/internal/config"
	"github.com/relay-llm/relay/internal/embeddedpg"
	"github.com/relay-llm/relay/internal/loader"
	"github.com/relay-llm/relay/internal/migrate"
	"github.com/relay-llm/relay/internal/secret"
	"github.com/relay-llm/relay/internal/server"
	"github.com/relay-llm/relay/internal/store"
)

// database connects to RELAY_DATABASE_URL, or starts the embedded Postgres
// under the data dir. stop shuts the embedded one down (a no-op otherwise).
func database(ctx context.Context, cfg *config.Config, log *slog.Logger) (st *store.Store, stop func(), err error) {
	url := cfg.DatabaseURL
	stop = func() {}
	if url == "" {
		log.Info("RELAY_DATABASE_URL is not set; starting the embedded Postgres", "data_dir", cfg.DataDir)
		pg, err := embeddedpg.Start(ctx, embeddedpg.Config{DataDir: cfg.DataDir, Logger: log})
		if err != nil {
			return nil, nil, fmt.Errorf("start embedded postgres: %w", err)
		}
		stop = func() {
			if err := pg.Stop(context.Background()); err != nil {
				log.Error("stop embedded postgres", "err", err)
			}
		}
		url = pg.URL()
	}
	st, err = store.Open(ctx, url)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return st, stop, nil
}

// masterKey returns the configured master key; in the embedded mode without
// one, it loads or creates DataDir/master.key (mode 0600).
func masterKey(cfg *config.Config, log *slog.Logger) ([]byte, error) {
	if cfg.MasterKey != nil {
		return cfg.MasterKey, nil
	}
	if cfg.DatabaseURL != "" {
		log.Warn("RELAY_MASTER_KEY is not set: host keys can only be env: references")
		return nil, nil
	}
	path := filepath.Join(cfg.DataDir, "master.key")
	if b, err := os.ReadFile(path); err == nil {
		k, err := secret.ParseKey(string(b))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		return k, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read master key: %w", err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	enc := secret.NewKey()
	if err := os.WriteFile(path, []byte(enc+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("write master key: %w", err)
	}
	log.Warn("RELAY_MASTER_KEY is not set: generated one and kept it in the data dir; set RELAY_MASTER_KEY in production", "path", path)
	return secret.ParseKey(enc)
}

func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := config.Load(args, getenv, stderr)
	if err != nil {
		return err
	}
	log := cfg.Logger(stderr)
	warnUnknownVariables(log, os.Environ())
	// Everything started below is stopped in reverse when serve returns:
	// after the listeners have drained, within RELAY_SHUTDOWN_TIMEOUT.
	svcs := &services{log: log}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		svcs.stop(stopCtx)
	}()

	st, stopDB, err := database(ctx, cfg, log)
	if err != nil {
		return err
	}
	svcs.add("database", noErr(stopDB))
	svcs.add("store", noErr(st.Close))

	if err := startupMigration(ctx, cfg, st); err != nil {
		return err
	}
	key, err := masterKey(cfg, log)
	if err != nil {
		return err
	}
	box, err := secret.NewRotatingBox(key, cfg.PreviousKeys...)
	if err != nil {
		return fmt.Errorf("RELAY_MASTER_KEY: %w", err)
	}
	// env: host keys may name only the operator's allow-list, never one of
	// Relay's own settings: checked on write and on every resolve.
	box = box.WithEnvRefs(secret.NewEnvRefs(cfg.SecretEnvPrefixes, config.Names()))

	ld := loader.New(st, box, log, loader.Options{
		Debounce: cfg.SnapshotDebounce,
		Resync:   cfg.SnapshotResync,
		Getenv:   getenv,
	})
	planes, err := newPlanes(ctx, cfg, st, box, ld, svcs, getenv, stdout, log)
	if err != nil {
		return err
	}

	srv := server.New(server.Options{
		InferenceAddr: net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.Port)),
		ControlAddr:   net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.ControlPort)),
		Inference:     planes.inference,
		Control:       planes.control,
		Status:        ld,
		ControlCheck:  databaseCheck(st),
		Limits: server.Limits{
			ReadHeaderTimeout:     cfg.ReadHeaderTimeout,
			BodyTimeout:           cfg.BodyTimeout,
			BodyDeadline:          cfg.BodyDeadline,
			MaxHeaderBytes:        cfg.MaxHeaderBytes,
			MaxHeaders:            cfg.MaxHeaders,
			IdleTimeout:           cfg.IdleTimeout,
			MaxConnections:        cfg.MaxConnections,
			ControlMaxConnections: cfg.ControlMaxConnections,
		},
		DrainDelay:      cfg.DrainDelay,
		ShutdownTimeout: cfg.ShutdownTimeout,
		Logger:          log,
		TLSCertFile:     cfg.TLSCertFile,
		TLSKeyFile:      cfg.TLSKeyFile,
		TrustedProxies:  cfg.TrustedProxies,
	})
	inAddr, ctlAddr, err := srv.Listen()
	if err != nil {
		return err
	}
	if err := planes.start(ctx, inAddr, ctlAddr); err != nil {
		return err
	}
	svcs.goRun(ctx, "snapshot loader", ld.Run)
	return srv.Run(ctx)
}

// warnUnknownVariables names each RELAY_ variable Relay does not read (a
// misspelling, another gateway's name) with the setting it probably meant.
func warnUnknownVariables(log *slog.Logger, environ []string) {
	for _, u := range config.UnknownVariables(environ) {
		if u.Nearest != "" {
			log.Warn("unknown setting "+u.Name+" is ignored; did you mean "+u.Nearest+"?", "variable", u.Name, "nearest", u.Nearest)
		} else {
			log.Warn("unknown setting "+u.Name+" is ignored", "variable", u.Name)
		}
	}
}

// databaseCheck is the control plane's readiness: Postgres answers. The
// reason it gives names no address or user (/readyz is unauthenticated).
func databaseCheck(st *store.Store) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := st.Ping(ctx); err != nil {
			return errors.New("the database does not answer: the control API is unavailable; the inference plane serves from its snapshot")
		}
		return nil
	}
}

func migrateCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("migrate: want up, down or status")
	}
	sub := args[0]
	cfg, err := config.Load(args[1:], getenv, stderr)
	if err != nil {
		return err
	}
	log := cfg.Logger(stderr)
	st, stopDB, err := database(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer stopDB()
	defer st.Close()
	switch strings.ToLower(sub) {
	case "up":
		return migrate.Up(ctx, st.Pool())
	case "down":
		return migrate.Down(ctx, st.Pool())
	case "status":
		return migrate.Status(ctx, st.Pool(), stdout)
	}
	return fmt.Errorf("migrate: unknown subcommand %q (want up, down or status)", sub)
}

// rotateMasterKey reseals every sealed host key under a new master key, in
// one transaction. The procedure: start every pod with RELAY_MASTER_KEY=new
// and RELAY_MASTER_KEY_PREVIOUS=old (they open values sealed under either),
// run this, then drop RELAY_MASTER_KEY_PREVIOUS. The new key comes from
// --new-key or RELAY_NEW_MASTER_KEY; the old one is RELAY_MASTER_KEY (or, on
// the embedded default, the data dir's master.key, which is then replaced).
func rotateMasterKey(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("rotate-master-key", stderr)
	newKeyText := fs.String("new-key", getenv("RELAY_NEW_MASTER_KEY"), "the new master key, base64 of 32 bytes (RELAY_NEW_MASTER_KEY)")
	dataDir := fs.String("data-dir", "", "data directory (RELAY_DATA_DIR)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *newKeyText == "" {
		return errors.New("rotate-master-key: give the new key with --new-key or RELAY_NEW_MASTER_KEY (make one with: openssl rand -base64 32)")
	}
	newKey, err := secret.ParseKey(*newKeyText)
	if err != nil {
		return fmt.Errorf("--new-key: %w", err)
	}
	var cfgArgs []string
	if *dataDir != "" {
		cfgArgs = append(cfgArgs, "--data-dir", *dataDir)
	}
	cfg, err := config.Load(cfgArgs, getenv, stderr)
	if err != nil {
		return err
	}
	log := cfg.Logger(stderr)
	oldKey, err := masterKey(cfg, log)
	if err != nil {
		return err
	}
	if oldKey == nil {
		return errors.New("rotate-master-key: RELAY_MASTER_KEY is not set, so nothing is sealed under it")
	}
	oldBox, err := secret.NewRotatingBox(oldKey, cfg.PreviousKeys...)
	if err != nil {
		return err
	}
	newBox, err := secret.NewBox(newKey)
	if err != nil {
		return err
	}
	st, stopDB, err := database(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer stopDB()
	defer st.Close()
	n := 0
	err = st.InTx(ctx, func(tx *store.Tx) error {
		page := store.HostKeysPage{Limit: 500}
		for {
			keys, err := tx.HostKeys().List(ctx, page)
			if err != nil {
				return err
			}
			for _, k := range keys {
				if k.SecretCiphertext == nil {
					continue
				}
				plain, err := oldBox.Open(k.SecretCiphertext)
				if err != nil {
					return fmt.Errorf("host key %s: %w", k.Slug, err)
				}
				sealed, err := newBox.Seal(plain)
				if err != nil {
					return err
				}
				if _, err := tx.HostKeys().Reseal(ctx, "rotate-master-key", k.ID, sealed); err != nil {
					return err
				}
				n++
			}
			if len(keys) < int(page.Limit) {
				return nil
			}
			page.After = keys[len(keys)-1].ID
		}
	})
	if err != nil {
		return fmt.Errorf("rotate-master-key: nothing changed: %w", err)
	}
	if cfg.MasterKey == nil && cfg.DatabaseURL == "" {
		path := filepath.Join(cfg.DataDir, "master.key")
		if err := os.WriteFile(path, []byte(*newKeyText+"\n"), 0o600); err != nil {
			return fmt.Errorf("resealed %d host keys but could not write %s: %w", n, path, err)
		}
	}
	fmt.Fprintf(stdout, "resealed %d host keys under the new master key; set RELAY_MASTER_KEY to it everywhere and drop RELAY_MASTER_KEY_PREVIOUS\n", n)
	return nil
}

// startupMigration applies pending migrations, or, with
// RELAY_MIGRATE_ON_START=false (migrations run as their own deploy step),
// refuses to serve a schema older than this binary.
func startupMigration(ctx context.Context, cfg *config.Config, st *store.Store) error {
	if cfg.MigrateOnStart {
		return migrate.Up(ctx, st.Pool())
	}
	pending, err := migrate.Pending(ctx, st.Pool())
	if err != nil {
		return err
	}
	if pending {
		return errors.New("RELAY_MIGRATE_ON_START=false and the database has pending migrations: run `relay migrate up` first")
	}
	return nil
}

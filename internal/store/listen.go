package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Listen holds one dedicated connection (not from the pool) that LISTENs on
// Channel. onListening runs once the LISTEN is in place, so a caller can do
// its full reload knowing no later change is missed; onNotify gets every
// payload and must not block. Listen returns when ctx ends (nil) or the
// connection fails (the error); the caller reconnects.
func (s *Store) Listen(ctx context.Context, onListening func(backendPID uint32), onNotify func(payload string)) error {
	cfg := s.pool.Config().ConnConfig.Copy()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect listener: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		conn.Close(closeCtx) // best effort on the way out
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{Channel}.Sanitize()); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	onListening(conn.PgConn().PID())
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("wait for notification: %w", err)
		}
		onNotify(n.Payload)
	}
}

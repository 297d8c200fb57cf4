package controlapi

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/store"
)

// Operations (status, reload). Status is readable by every role binding (it
// shows no catalog rows); reload needs ManageSystem. Breakers are in
// breakers.go, usage in usage.go.

func (s *Server) podName() string {
	if s.cfg.PodName != "" {
		return s.cfg.PodName
	}
	if h, err := os.Hostname(); err == nil {
		return h
	}
	return "relay"
}

func (s *Server) podStatus() models.PodStatus {
	now := s.now()
	st := models.PodStatus{
		PodID: s.podName(), Version: s.cfg.Version, StartedAt: s.cfg.StartedAt, ReportedAt: now,
		SnapshotLoadedAt: now,
	}
	if st.Version == "" {
		st.Version = "dev"
	}
	if snap := s.cfg.Snapshot; snap != nil {
		age := snap.Age()
		st.SnapshotVersion = int64(snap.Version())
		st.SnapshotAgeSeconds = age.Seconds()
		st.SnapshotLoadedAt = now.Add(-age)
		if l, ok := snap.(interface{ Listening() bool }); ok {
			st.ListenerConnected = l.Listening()
		} else {
			// Without a way to ask, a loaded snapshot is the best sign the
			// loader (and so its LISTEN connection) is up.
			st.ListenerConnected = st.SnapshotVersion > 0
		}
	}
	return st
}

// GetStatus is the operation of the same name in openapi/control.yaml. Only
// this pod is listed: pods report to each other through Redis, which this
// build does not wire yet.
func (v *Service) GetStatus(ctx context.Context) (out models.Status, err error) {
	s, ctx, done, err := v.enter(ctx, "GetStatus")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	if err := can403(c, rbac.ReadCatalog, rbac.System()); err != nil {
		return out, err
	}
	pod := s.podStatus()
	return models.Status{Pod: pod, Pods: []models.PodStatus{pod}}, nil
}

// ReloadSnapshot is the operation of the same name in openapi/control.yaml: rebuild this pod's
// snapshot now, then NOTIFY so every other pod reloads in full too.
func (v *Service) ReloadSnapshot(ctx context.Context) (out models.SnapshotReload, err error) {
	s, ctx, done, err := v.enter(ctx, "ReloadSnapshot")
	if err != nil {
		return out, err
	}
	defer done(&err)
	if _, err := systemWrite(ctx); err != nil {
		return out, err
	}
	snap := s.cfg.Snapshot
	if snap == nil {
		return out, &apiError{status: 501, code: codeNotImplemented, message: "this control plane has no snapshot to reload"}
	}
	if l, ok := snap.(interface{ Load(context.Context) error }); ok {
		if err := l.Load(ctx); err != nil {
			return out, err
		}
	} else if err := s.awaitReload(ctx, snap); err != nil {
		return out, err
	}
	// A payload that names no row makes every loader do a full reload.
	notified := s.st.InTx(ctx, func(tx *store.Tx) error { return tx.Notify(ctx, "reload") }) == nil
	pod := s.podStatus()
	return models.SnapshotReload{
		PodID: pod.PodID, SnapshotVersion: pod.SnapshotVersion, SnapshotLoadedAt: pod.SnapshotLoadedAt, Notified: notified,
	}, nil
}

// awaitReload asks for a reload and waits until the version moves, up to ReloadWait.
func (s *Server) awaitReload(ctx context.Context, snap Snapshot) error {
	before := snap.Version()
	snap.RequestReload()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ReloadWait)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for snap.Version() == before {
		select {
		case <-ctx.Done():
			return errors.New("snapshot reload: timed out waiting for the new snapshot")
		case <-tick.C:
		}
	}
	return nil
}

// acceptKey carries the request's Accept header to the handlers (usage CSV).
type acceptKey struct{}

func acceptFrom(ctx context.Context) string {
	s, _ := ctx.Value(acceptKey{}).(string)
	return s
}

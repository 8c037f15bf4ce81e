package services

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"
)

// Postgres is a throwaway Postgres server with a "crowsnest" database.
type Postgres struct {
	URL string
	srv *pgtest.Server
}

// StartPostgres initialises a server in a temp dir and creates the database.
func StartPostgres(ctx context.Context) (*Postgres, error) {
	srv, err := pgtest.StartServer()
	if err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	conn, err := pgx.Connect(ctx, srv.AdminURL())
	if err != nil {
		_ = srv.Stop()
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE crowsnest"); err != nil {
		_ = srv.Stop()
		return nil, fmt.Errorf("create database: %w", err)
	}
	return &Postgres{URL: srv.DatabaseURL("crowsnest"), srv: srv}, nil
}

// Stop shuts the server down and removes its data.
func (p *Postgres) Stop() error { return p.srv.Stop() }

// Pause stops the server as an outage would (every client cut off,
// committed data kept); Resume brings it back on the same address.
func (p *Postgres) Pause() error { return p.srv.Pause() }

// Resume restarts a paused server.
func (p *Postgres) Resume() error { return p.srv.Resume() }

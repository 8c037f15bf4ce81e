package services

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"
)

// Postgres is a throwaway Postgres server with a "crowsnest" database.
type Postgres struct {
	URL string
	// PodURL, for a server started by StartPostgresForPods, is the
	// database's URL from the Pods' network: user crowsnest with a password
	// (what a chart's global.database Secret holds).
	PodURL string
	srv    *pgtest.Server
}

// StartPostgres initialises a server in a temp dir and creates the database.
func StartPostgres(ctx context.Context) (*Postgres, error) {
	return startPostgres(ctx, pgtest.ServerOptions{})
}

// StartPostgresForPods is StartPostgres on gateway too, where Pods of
// subnet log in as crowsnest with a password (scram-sha-256) to the
// crowsnest database, which that user owns: an external database as a
// cluster's installs use one.
func StartPostgresForPods(ctx context.Context, gateway net.IP, subnet *net.IPNet) (*Postgres, error) {
	p, err := startPostgres(ctx, pgtest.ServerOptions{Listen: []string{gateway.String()},
		HBA: []string{fmt.Sprintf("host crowsnest crowsnest %s scram-sha-256", subnet)}})
	if err != nil {
		return nil, err
	}
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	password := hex.EncodeToString(b)
	conn, err := pgx.Connect(ctx, p.srv.AdminURL())
	if err == nil {
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, fmt.Sprintf("CREATE ROLE crowsnest LOGIN PASSWORD '%s'; ALTER DATABASE crowsnest OWNER TO crowsnest", password))
	}
	if err == nil {
		// Postgres 15: only the owner of the public schema creates in it.
		err = execIn(ctx, p.URL, "ALTER SCHEMA public OWNER TO crowsnest")
	}
	if err != nil {
		_ = p.Stop()
		return nil, fmt.Errorf("create the crowsnest role: %w", err)
	}
	p.PodURL = (&url.URL{Scheme: "postgres", User: url.UserPassword("crowsnest", password),
		Host: net.JoinHostPort(gateway.String(), strconv.Itoa(p.srv.Port())), Path: "/crowsnest", RawQuery: "sslmode=disable"}).String()
	return p, nil
}

func execIn(ctx context.Context, dbURL, sql string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func startPostgres(ctx context.Context, o pgtest.ServerOptions) (*Postgres, error) {
	srv, err := pgtest.StartServerWith(o)
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

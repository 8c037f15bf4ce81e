package discovery

import (
	"errors"
	"strings"
	"testing"
)

var hexA = strings.Repeat("a", 64)

func TestNormalize(t *testing.T) {
	d := "sha256:" + hexA
	tests := []struct {
		in, want string
		err      error
	}{
		{"docker-pullable://nginx@" + d, "docker.io/library/nginx@" + d, nil},
		{"docker.io/library/nginx@" + d, "docker.io/library/nginx@" + d, nil},
		{"nginx:1.27@" + d, "docker.io/library/nginx@" + d, nil},
		{"bitnami/redis@" + d, "docker.io/bitnami/redis@" + d, nil},
		{"docker.io/redis@" + d, "docker.io/library/redis@" + d, nil},
		{"index.docker.io/library/redis@" + d, "docker.io/library/redis@" + d, nil},
		{"ghcr.io/org/app@" + d, "ghcr.io/org/app@" + d, nil},
		{"localhost:5000/demo/alpine:3.20@" + d, "localhost:5000/demo/alpine@" + d, nil},
		{"127.0.0.1:5000/demo@" + d, "127.0.0.1:5000/demo@" + d, nil},
		{"localhost/app@" + d, "localhost/app@" + d, nil},
		{"docker://" + d, "", ErrNotPullable},
		{d, "", ErrNotPullable},
		{"nginx@sha256:ABC", "", ErrInvalid},
		{"nginx@sha512:" + hexA, "", ErrInvalid},
		{"nginx@sha256:" + strings.Repeat("A", 64), "", ErrInvalid},
		{"", "", ErrInvalid},
		{"nginx:latest", "", ErrInvalid},
		{"@" + d, "", ErrInvalid},
		{"Docker.io/Library/NGINX@" + d, "", ErrInvalid},
	}
	for _, tt := range tests {
		got, err := Normalize(tt.in)
		if !errors.Is(err, tt.err) {
			t.Errorf("Normalize(%q) error = %v, want %v", tt.in, err, tt.err)
			continue
		}
		if tt.err == nil && got.Ref() != tt.want {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got.Ref(), tt.want)
		}
		if errors.Is(tt.err, ErrNotPullable) && got.Digest != d {
			t.Errorf("Normalize(%q) digest = %q, want %q", tt.in, got.Digest, d)
		}
	}
}

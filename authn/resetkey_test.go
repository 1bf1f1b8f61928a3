package authn

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestResetKeys(t *testing.T) {
	keys := NewResetKeys("a test secret key of more than 32 bytes")
	now := time.Now()
	key := keys.Sign(42, "$argon2id$old", now.Add(ResetKeyLifetime))
	if user, err := keys.User(key); err != nil || user != 42 {
		t.Fatalf("User = %d, %v", user, err)
	}
	if err := keys.Check(key, "$argon2id$old", now); err != nil {
		t.Errorf("a fresh key: %v", err)
	}
	refused := map[string]error{
		"once the password changed":             keys.Check(key, "$argon2id$new", now),
		"after an hour":                         keys.Check(key, "$argon2id$old", now.Add(ResetKeyLifetime+time.Second)),
		"under another secret":                  NewResetKeys("another secret key of more than 32 bytes").Check(key, "$argon2id$old", now),
		"of another user":                       keys.Check(keys.Sign(43, "", now.Add(time.Hour))[:strings.IndexByte(key, '.')]+key[strings.IndexByte(key, '.'):], "$argon2id$old", now),
		"made for no password, once one is set": keys.Check(keys.Sign(42, "", now.Add(time.Hour)), "$argon2id$old", now),
	}
	for name, err := range refused {
		if !errors.Is(err, ErrBadResetKey) {
			t.Errorf("%s: %v, want ErrBadResetKey", name, err)
		}
	}
	for _, bad := range []string{"", ".", key + "A", strings.Repeat("A", 300), "djE6MDox." + key[strings.IndexByte(key, '.')+1:]} {
		if _, err := keys.User(bad); !errors.Is(err, ErrBadResetKey) {
			t.Errorf("User(%q): %v", bad, err)
		}
	}
}

func FuzzResetKey(f *testing.F) {
	keys := NewResetKeys("a test secret key of more than 32 bytes")
	f.Add(keys.Sign(1, "", time.Now().Add(time.Hour)))
	f.Add("djE6MToy.AAAA")
	f.Add("")
	f.Fuzz(func(t *testing.T, key string) {
		user, err := keys.User(key)
		if err == nil && user <= 0 {
			t.Fatalf("user %d from %q", user, key)
		}
		if keys.Check(key, "", time.Now()) == nil && !strings.Contains(key, ".") {
			t.Fatalf("accepted %q", key)
		}
	})
}

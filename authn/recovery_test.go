package authn

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRecoveryCodesMatchAllauth(t *testing.T) {
	// The contract's test vector: django-allauth's codes for a seed of 80 zeros.
	want := []string{"40017382", "93474438", "17854111", "92512815", "36599119",
		"80501426", "17309950", "47803705", "23071834", "73248777"}
	if diff := cmp.Diff(want, RecoveryCodes(strings.Repeat("0", 80))); diff != "" {
		t.Errorf("codes (-want +got):\n%s", diff)
	}
}

func TestRecoveryCodeIndex(t *testing.T) {
	if seed := NewRecoverySeed(); len(seed) != 80 || strings.ToLower(seed) != seed {
		t.Fatalf("NewRecoverySeed = %q, want 80 lower-case hex characters", seed)
	}
	seed := strings.Repeat("0", 80)
	codes := RecoveryCodes(seed)
	tests := []struct {
		name string
		code string
		want int
	}{
		{"first code matches", codes[0], 0},
		{"last code matches", codes[9], 9},
		{"wrong code does not match", "00000000", -1},
		{"prefix does not match", codes[3][:7], -1},
		{"empty code does not match", "", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RecoveryCodeIndex(seed, tt.code); got != tt.want {
				t.Errorf("RecoveryCodeIndex = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestSeedCipher(t *testing.T) {
	c := NewSeedCipher("secret")
	seed := NewRecoverySeed()
	sealed := c.Seal(7, seed)
	if strings.Contains(string(sealed), seed) {
		t.Fatal("sealed seed contains the seed in clear")
	}
	t.Run("opens for the same user", func(t *testing.T) {
		got, err := c.Open(7, sealed)
		if err != nil || got != seed {
			t.Errorf("Open = %q, %v; want %q", got, err, seed)
		}
	})
	t.Run("fails for another user", func(t *testing.T) {
		if _, err := c.Open(8, sealed); err == nil {
			t.Error("Open for another user succeeded")
		}
	})
	t.Run("fails under another secret", func(t *testing.T) {
		if _, err := NewSeedCipher("other").Open(7, sealed); err == nil {
			t.Error("Open under another secret succeeded")
		}
	})
	t.Run("fails when truncated", func(t *testing.T) {
		if _, err := c.Open(7, sealed[:5]); err == nil {
			t.Error("Open of a truncated record succeeded")
		}
	})
}

func TestEmailKeys(t *testing.T) {
	keys := NewEmailKeys("secret")
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	k := EmailKey{UserID: 42, Email: "Ann:x@example.com", Expires: now.Add(EmailKeyLifetime)}
	key := keys.Sign(k)
	t.Run("valid key names the address", func(t *testing.T) {
		got, err := keys.Check(key, now.Add(EmailKeyLifetime-time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(k, got); diff != "" {
			t.Errorf("key (-want +got):\n%s", diff)
		}
	})
	bad := []struct {
		name string
		key  string
		at   time.Time
	}{
		{"expired key is rejected", key, now.Add(EmailKeyLifetime)},
		{"key of another secret is rejected", NewEmailKeys("other").Sign(k), now},
		{"tampered key is rejected", "x" + key[1:], now},
		{"key without signature is rejected", strings.Split(key, ".")[0], now},
		{"garbage is rejected", "not a key", now},
		{"overlong key is rejected", strings.Repeat("a", 700) + "." + "b", now},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := keys.Check(tt.key, tt.at); err != ErrBadEmailKey {
				t.Errorf("Check = %v, want ErrBadEmailKey", err)
			}
		})
	}
}

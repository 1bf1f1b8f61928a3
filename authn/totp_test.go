package authn

import (
	"bytes"
	"encoding/base32"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// rfc6238Secret is the SHA-1 key of RFC 6238's Appendix B.
var rfc6238Secret = []byte("12345678901234567890")

func TestTOTPCodeMatchesRFC6238(t *testing.T) {
	// Appendix B's SHA-1 vectors are 8 digits; a 6-digit code is their
	// last 6.
	tests := []struct {
		unix int64
		want string
	}{
		{59, "94287082"},
		{1111111109, "07081804"},
		{1111111111, "14050471"},
		{1234567890, "89005924"},
		{2000000000, "69279037"},
		{20000000000, "65353130"},
	}
	for _, tt := range tests {
		step := TOTPStep(time.Unix(tt.unix, 0))
		if got, want := TOTPCode(rfc6238Secret, step), tt.want[2:]; got != want {
			t.Errorf("TOTPCode at %d = %q, want %q", tt.unix, got, want)
		}
	}
}

func TestMatchTOTP(t *testing.T) {
	now := time.Unix(1234567890, 0) // step 41152263, code 005924
	step := TOTPStep(now)
	code := TOTPCode(rfc6238Secret, step)
	if code != "005924" {
		t.Fatalf("code at now = %q, the RFC's vector is 005924", code)
	}
	tests := []struct {
		name     string
		code     string
		lastStep int64
		wantStep int64
		wantOK   bool
	}{
		{"the current code matches", code, 0, step, true},
		{"the previous step's code matches (clock behind)", TOTPCode(rfc6238Secret, step-1), 0, step - 1, true},
		{"the next step's code matches (clock ahead)", TOTPCode(rfc6238Secret, step+1), 0, step + 1, true},
		{"two steps back does not match", TOTPCode(rfc6238Secret, step-2), 0, 0, false},
		{"two steps ahead does not match", TOTPCode(rfc6238Secret, step+2), 0, 0, false},
		{"a replay of the last accepted step is refused", code, step, 0, false},
		{"an earlier step than the last accepted is refused", TOTPCode(rfc6238Secret, step-1), step - 1, 0, false},
		{"a later step than the last accepted matches", TOTPCode(rfc6238Secret, step+1), step, step + 1, true},
		{"spaces inside and around are ignored", " 005 924 ", 0, step, true},
		{"a tab inside is refused", "005\t924", 0, 0, false},
		{"a wrong code is refused", "005925", 0, 0, false},
		{"5 digits are refused", "05924", 0, 0, false},
		{"7 digits are refused", "0005924", 0, 0, false},
		{"the 8-digit RFC value is refused", "89005924", 0, 0, false},
		{"a sign is refused", "+05924", 0, 0, false},
		{"non-ASCII digits are refused", "٠٠٥٩٢٤", 0, 0, false},
		{"an empty code is refused", "", 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotStep, ok := MatchTOTP(rfc6238Secret, tt.code, now, tt.lastStep)
			if ok != tt.wantOK || gotStep != tt.wantStep {
				t.Errorf("MatchTOTP(%q, last %d) = %d, %v; want %d, %v", tt.code, tt.lastStep, gotStep, ok, tt.wantStep, tt.wantOK)
			}
		})
	}
	t.Run("a code of another secret is refused", func(t *testing.T) {
		if _, ok := MatchTOTP([]byte("12345678901234567891"), code, now, 0); ok {
			t.Error("another secret's check accepted the code")
		}
	})
}

func TestTOTPSecretAndURI(t *testing.T) {
	secret := NewTOTPSecret()
	if len(secret) != 20 || bytes.Equal(secret, NewTOTPSecret()) {
		t.Fatalf("NewTOTPSecret = %x, want 20 fresh random bytes", secret)
	}
	if got := EncodeTOTPSecret(rfc6238Secret); got != "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ" {
		t.Errorf("EncodeTOTPSecret = %q", got)
	}
	if got := EncodeTOTPSecret([]byte{0xff}); got != "74" {
		t.Errorf("EncodeTOTPSecret of one byte = %q, want no padding", got)
	}

	uri := TOTPURI(rfc6238Secret, "errata at ACME", "ann+2fa@example.com")
	want := "otpauth://totp/errata%20at%20ACME:ann%2B2fa%40example.com" +
		"?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=errata%20at%20ACME&algorithm=SHA1&digits=6&period=30"
	if uri != want {
		t.Errorf("TOTPURI =\n%s\nwant\n%s", uri, want)
	}
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	got := map[string]string{"scheme": u.Scheme, "type": u.Host, "label": strings.TrimPrefix(u.Path, "/"),
		"issuer": q.Get("issuer"), "algorithm": q.Get("algorithm"), "digits": q.Get("digits"), "period": q.Get("period")}
	wantParsed := map[string]string{"scheme": "otpauth", "type": "totp", "label": "errata at ACME:ann+2fa@example.com",
		"issuer": "errata at ACME", "algorithm": "SHA1", "digits": "6", "period": "30"}
	if diff := cmp.Diff(wantParsed, got); diff != "" {
		t.Errorf("parsed URI (-want +got):\n%s", diff)
	}
	decoded, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(q.Get("secret"))
	if err != nil || !bytes.Equal(decoded, rfc6238Secret) {
		t.Errorf("the URI's secret decodes to %q, %v", decoded, err)
	}
	if u, _ := url.Parse(TOTPURI(secret, "a:b", "c:d")); strings.Count(u.EscapedPath(), ":") != 1 {
		t.Errorf("colons of the issuer and account are not escaped: %s", u.EscapedPath())
	}
}

func TestTOTPCipher(t *testing.T) {
	c := NewTOTPCipher("secret")
	secret := NewTOTPSecret()
	sealed := c.Seal(7, secret)
	if bytes.Contains(sealed, secret) {
		t.Fatal("the sealed secret contains the secret in clear")
	}
	if got, err := c.Open(7, sealed); err != nil || !bytes.Equal(got, secret) {
		t.Errorf("Open = %x, %v; want %x", got, err, secret)
	}
	if _, err := c.Open(8, sealed); err == nil {
		t.Error("Open for another user succeeded")
	}
	if _, err := c.Open(7, sealed[:5]); err == nil {
		t.Error("Open of a truncated record succeeded")
	}
	t.Run("the key is not the recovery seeds' key", func(t *testing.T) {
		if _, err := NewSeedCipher("secret").Open(7, sealed); err == nil {
			t.Error("the seed cipher opened a sealed TOTP secret")
		}
	})
}

// TestSeedCipherOpensEarlierRecords: a seed sealed before the TOTP cipher
// shared its code (this record) still opens.
func TestSeedCipherOpensEarlierRecords(t *testing.T) {
	sealed, _ := hex.DecodeString("a3c28c1b716bee467e962267d53af0179bc0af613844c0e851eeb94648e5eee58804fd41811728d7c93e12d0")
	got, err := NewSeedCipher("secret").Open(7, sealed)
	if err != nil || got != "0123456789abcdef" {
		t.Errorf("Open = %q, %v", got, err)
	}
}

func FuzzMatchTOTP(f *testing.F) {
	now := time.Unix(1234567890, 0)
	for _, s := range []string{"005924", " 005 924 ", "", "0059245", "abcdef", "٠٠٥٩٢٤", "005\x00924"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, code string) {
		step, ok := MatchTOTP(rfc6238Secret, code, now, 0)
		if !ok {
			return
		}
		norm := TrimCode(code)
		current := TOTPStep(now)
		if step < current-1 || step > current+1 || TOTPCode(rfc6238Secret, step) != norm {
			t.Fatalf("MatchTOTP(%q) = step %d, whose code is %q", code, step, TOTPCode(rfc6238Secret, step))
		}
		if _, again := MatchTOTP(rfc6238Secret, code, now, step); again {
			t.Fatalf("MatchTOTP(%q) matched again after its step %d was the last", code, step)
		}
	})
}

package authn

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// TOTP is RFC 6238 as authenticator apps implement it: HMAC-SHA1, codes of
// 6 digits, steps of 30 seconds counted from the Unix epoch, and a secret
// of 160 bits.
const (
	TOTPDigits      = 6
	TOTPPeriod      = 30 * time.Second
	totpSecretBytes = 20
)

// NewTOTPSecret returns a fresh random secret of 160 bits.
func NewTOTPSecret() []byte {
	b := make([]byte, totpSecretBytes)
	rand.Read(b)
	return b
}

// TOTPStep returns the 30-second step that t falls in.
func TOTPStep(t time.Time) int64 {
	return t.Unix() / int64(TOTPPeriod/time.Second)
}

// TOTPCode returns the code of secret at step: RFC 4226's HOTP value of the
// step as counter, its last 6 decimal digits zero-padded.
func TOTPCode(secret []byte, step int64) string {
	h := hmac.New(sha1.New, secret)
	var counter [8]byte
	binary.BigEndian.PutUint64(counter[:], uint64(step))
	h.Write(counter[:])
	sum := h.Sum(nil)
	offset := sum[len(sum)-1] & 0x0f
	v := binary.BigEndian.Uint32(sum[offset:offset+4]) & 0x7fff_ffff
	return fmt.Sprintf("%0*d", TOTPDigits, v%1_000_000)
}

// MatchTOTP reports whether code is secret's code at the step of now or one
// step either side of it (a clock off by up to 30 s), and returns that
// step. A step not later than lastStep, the last one the user had
// accepted, never matches: a code is good once. The caller records step as
// the new last one with a conditional update, so that two requests with
// one code cannot both pass.
//
// Spaces are removed first (apps show "123 456"); what remains must be
// exactly 6 ASCII digits. The code is compared with every candidate in
// constant time; when two candidates match, the later step is returned.
func MatchTOTP(secret []byte, code string, now time.Time, lastStep int64) (step int64, ok bool) {
	code = TrimCode(code)
	if len(code) != TOTPDigits {
		return 0, false
	}
	for i := range len(code) {
		if code[i] < '0' || code[i] > '9' {
			return 0, false
		}
	}
	current := TOTPStep(now)
	for s := current - 1; s <= current+1; s++ {
		equal := subtle.ConstantTimeCompare([]byte(TOTPCode(secret, s)), []byte(code)) == 1
		if equal && s > lastStep {
			step, ok = s, true
		}
	}
	return step, ok
}

// TrimCode returns a code as a person typed it without its spaces, inside
// ("123 456", as apps show it) and around.
func TrimCode(code string) string {
	return strings.ReplaceAll(strings.TrimSpace(code), " ", "")
}

// totpBase32 is the base32 of authenticator apps: RFC 4648's alphabet,
// upper case, without padding.
var totpBase32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// EncodeTOTPSecret returns secret as a person types it into an
// authenticator app: upper-case base32 without padding.
func EncodeTOTPSecret(secret []byte) string {
	return totpBase32.EncodeToString(secret)
}

// TOTPURI returns the otpauth:// URI of secret that an authenticator app
// reads from a QR code: the label "issuer:account" and the issuer,
// algorithm, digits and period that the app would otherwise guess.
func TOTPURI(secret []byte, issuer, account string) string {
	return "otpauth://totp/" + uriEscape(issuer) + ":" + uriEscape(account) +
		"?secret=" + EncodeTOTPSecret(secret) +
		"&issuer=" + uriEscape(issuer) +
		"&algorithm=SHA1&digits=6&period=30"
}

// uriEscape percent-encodes every byte of s but RFC 3986's unreserved
// characters, spaces included as %20 (never +), colons as %3A.
func uriEscape(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

// TOTPCipher encrypts TOTP secrets at rest, bound to their user, under a
// key derived from the server secret for this purpose alone.
type TOTPCipher struct {
	c userCipher
}

// NewTOTPCipher returns the cipher of secret.
func NewTOTPCipher(secret string) *TOTPCipher {
	return &TOTPCipher{c: newUserCipher(secret, "TOTP secret encryption")}
}

// Seal encrypts the TOTP secret of userID: a random nonce followed by the
// ciphertext.
func (c *TOTPCipher) Seal(userID int64, totpSecret []byte) []byte {
	return c.c.seal(userID, totpSecret)
}

// Open decrypts what Seal returned for userID.
func (c *TOTPCipher) Open(userID int64, sealed []byte) ([]byte, error) {
	return c.c.open(userID, sealed)
}

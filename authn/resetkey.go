package authn

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ResetKeyLifetime is how long a password reset key works.
const ResetKeyLifetime = time.Hour

// maxResetKeyLen bounds a reset key: "v1:<user>:<expiry>" and a 32-byte
// signature, both base64url, with room to spare.
const maxResetKeyLen = 200

// ErrBadResetKey means a password reset key is malformed, forged, expired,
// or void because the password changed since it was made.
var ErrBadResetKey = errors.New("authn: invalid or expired password reset key")

// ResetKeys signs and checks the keys of password reset mail. A key names
// the user and its expiry; its HMAC-SHA256, under a key derived from the
// server secret, covers them and the user's password hash at the time, so
// that the key stops working once the password changes (it is used, or
// changed otherwise): no key is stored.
type ResetKeys struct {
	mac []byte
}

// NewResetKeys returns the signer of secret.
func NewResetKeys(secret string) *ResetKeys {
	return &ResetKeys{mac: deriveKey(secret, "password reset key")}
}

// Sign returns the key that resets the password of userID, whose password
// hash is now passwordHash ("" for none), until expires.
func (k *ResetKeys) Sign(userID int64, passwordHash string, expires time.Time) string {
	payload := fmt.Sprintf("v1:%d:%d", userID, expires.Unix())
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." +
		base64.RawURLEncoding.EncodeToString(k.sum(payload, passwordHash))
}

// User returns the user a well-formed key names, not yet checked: the
// caller reads that user's password hash and passes it to Check.
func (k *ResetKeys) User(key string) (int64, error) {
	k0, err := parseResetKey(key)
	return k0.userID, err
}

// Check returns nil when errata signed key for the password hash
// passwordHash and it has not expired at now; otherwise ErrBadResetKey.
func (k *ResetKeys) Check(key, passwordHash string, now time.Time) error {
	p, err := parseResetKey(key)
	if err != nil {
		return err
	}
	if !hmac.Equal(p.sig, k.sum(p.payload, passwordHash)) || !now.Before(p.expires) {
		return ErrBadResetKey
	}
	return nil
}

// resetKey is a key's parts, not yet checked.
type resetKey struct {
	payload string // "v1:<user>:<expiry>", which the signature covers
	userID  int64
	expires time.Time
	sig     []byte
}

// parseResetKey reads the parts of key.
func parseResetKey(key string) (resetKey, error) {
	if len(key) > maxResetKeyLen {
		return resetKey{}, ErrBadResetKey
	}
	p64, s64, ok := strings.Cut(key, ".")
	if !ok {
		return resetKey{}, ErrBadResetKey
	}
	payload, err1 := base64.RawURLEncoding.Strict().DecodeString(p64)
	sig, err2 := base64.RawURLEncoding.Strict().DecodeString(s64)
	if err1 != nil || err2 != nil || len(sig) != sha256.Size {
		return resetKey{}, ErrBadResetKey
	}
	parts := strings.Split(string(payload), ":")
	if len(parts) != 3 || parts[0] != "v1" {
		return resetKey{}, ErrBadResetKey
	}
	userID, err1 := strconv.ParseInt(parts[1], 10, 64)
	exp, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || userID <= 0 {
		return resetKey{}, ErrBadResetKey
	}
	return resetKey{payload: string(payload), userID: userID, expires: time.Unix(exp, 0), sig: sig}, nil
}

func (k *ResetKeys) sum(payload, passwordHash string) []byte {
	m := hmac.New(sha256.New, k.mac)
	m.Write([]byte(payload))
	m.Write([]byte{0})
	m.Write([]byte(passwordHash))
	return m.Sum(nil)
}

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

// EmailKeyLifetime is how long a confirmation key stays valid.
const EmailKeyLifetime = 3 * 24 * time.Hour

// maxEmailKeyLen bounds a key: a 254-character address and its signature
// fit with room to spare.
const maxEmailKeyLen = 600

// ErrBadEmailKey means a confirmation key is malformed, forged or expired.
var ErrBadEmailKey = errors.New("authn: invalid or expired email key")

// EmailKeys signs and checks the keys of confirmation links. A key names the
// user and the address and carries its expiry; an HMAC-SHA256 under a key
// derived from the server secret proves that errata wrote it.
type EmailKeys struct {
	mac []byte
}

// NewEmailKeys returns the signer of secret.
func NewEmailKeys(secret string) *EmailKeys {
	return &EmailKeys{mac: deriveKey(secret, "email confirmation key")}
}

// EmailKey is what a confirmation key says.
type EmailKey struct {
	UserID  int64
	Email   string
	Expires time.Time
}

// Sign returns the key for k: base64url of "v1:<user>:<expiry>:<email>", a
// dot, and base64url of its HMAC. It only uses characters that need no
// escaping in a URL path.
func (e *EmailKeys) Sign(k EmailKey) string {
	payload := fmt.Sprintf("v1:%d:%d:%s", k.UserID, k.Expires.Unix(), k.Email)
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." +
		base64.RawURLEncoding.EncodeToString(e.sum(payload))
}

// Check returns what key says when errata signed it and it has not expired
// at now; otherwise ErrBadEmailKey.
func (e *EmailKeys) Check(key string, now time.Time) (EmailKey, error) {
	var k EmailKey
	if len(key) > maxEmailKeyLen {
		return k, ErrBadEmailKey
	}
	p64, s64, ok := strings.Cut(key, ".")
	if !ok {
		return k, ErrBadEmailKey
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p64)
	sig, err2 := base64.RawURLEncoding.DecodeString(s64)
	if err1 != nil || err2 != nil || !hmac.Equal(sig, e.sum(string(payload))) {
		return k, ErrBadEmailKey
	}
	parts := strings.SplitN(string(payload), ":", 4)
	if len(parts) != 4 || parts[0] != "v1" {
		return k, ErrBadEmailKey
	}
	user, err1 := strconv.ParseInt(parts[1], 10, 64)
	exp, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return k, ErrBadEmailKey
	}
	k = EmailKey{UserID: user, Email: parts[3], Expires: time.Unix(exp, 0)}
	if !now.Before(k.Expires) {
		return EmailKey{}, ErrBadEmailKey
	}
	return k, nil
}

func (e *EmailKeys) sum(payload string) []byte {
	m := hmac.New(sha256.New, e.mac)
	m.Write([]byte(payload))
	return m.Sum(nil)
}

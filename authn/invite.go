package authn

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"time"
)

// InviteKeys makes the tokens of invitations (docs/members.md,
// "Invitations"): HMAC-SHA256, under a key derived from the server secret
// for this purpose alone, of the pending member's id and the invitation's
// expiry. A token is thus 256 bits that nobody without the secret can
// compute, and the database keeps only its SHA-256 (Hash), through which
// it is found, spent and expired. Owners and managers can be shown the
// link again (invite_link) without errata keeping the token; a new
// invitation of the same member has a new expiry, and so a new token,
// and the old one stops working.
type InviteKeys struct {
	key []byte
}

// NewInviteKeys returns the invitation keys of secret.
func NewInviteKeys(secret string) *InviteKeys {
	return &InviteKeys{key: deriveKey(secret, "invitation tokens")}
}

// Token returns the token of the invitation of member memberID that
// expires at expires (to the microsecond, as PostgreSQL keeps it): 43
// characters of unpadded base64url.
func (k *InviteKeys) Token(memberID int64, expires time.Time) string {
	m := hmac.New(sha256.New, k.key)
	m.Write([]byte(strconv.FormatInt(memberID, 10) + ":" + strconv.FormatInt(expires.UnixMicro(), 10)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// WellFormedInviteToken reports whether token has the form of Token's:
// anything else names no invitation and is not looked up.
func WellFormedInviteToken(token string) bool {
	b, err := base64.RawURLEncoding.Strict().DecodeString(token)
	return err == nil && len(b) == sha256.Size
}

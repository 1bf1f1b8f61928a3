package authn

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
)

// InviteKeys makes the tokens of invitations (docs/members.md,
// "Invitations"): 256 random bits each. The database keeps the token's
// SHA-256 (Hash), through which it is found, spent and expired, and the
// token sealed with AES-256-GCM under a key derived from the server secret
// for this purpose alone, bound to the pending member's id, so that owners
// and managers can be shown the link again (invite_link). A new invitation
// of the same member has a new token, and the old one stops working.
type InviteKeys struct {
	cipher userCipher
}

// NewInviteKeys returns the invitation keys of secret.
func NewInviteKeys(secret string) *InviteKeys {
	return &InviteKeys{cipher: newUserCipher(secret, "invitation token encryption")}
}

// New returns a fresh token for the invitation of member memberID (43
// characters of unpadded base64url) with what the database keeps of it:
// its hash and its sealed form.
func (k *InviteKeys) New(memberID int64) (token string, hash, sealed []byte) {
	b := make([]byte, sha256.Size)
	rand.Read(b)
	token = base64.RawURLEncoding.EncodeToString(b)
	return token, Hash(token), k.cipher.seal(memberID, []byte(token))
}

// Open returns the token that New sealed for memberID.
func (k *InviteKeys) Open(memberID int64, sealed []byte) (string, error) {
	token, err := k.cipher.open(memberID, sealed)
	return string(token), err
}

// WellFormedInviteToken reports whether token has the form of Token's:
// anything else names no invitation and is not looked up.
func WellFormedInviteToken(token string) bool {
	b, err := base64.RawURLEncoding.Strict().DecodeString(token)
	return err == nil && len(b) == sha256.Size
}

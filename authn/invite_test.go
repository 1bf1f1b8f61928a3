package authn

import (
	"bytes"
	"testing"
)

func TestInviteKeys(t *testing.T) {
	k := NewInviteKeys("an invitation test secret of 32+ bytes")
	token, hash, sealed := k.New(7)
	if !WellFormedInviteToken(token) || !bytes.Equal(hash, Hash(token)) {
		t.Fatalf("New(7) = %q, hash %x: want a well-formed token and its SHA-256", token, hash)
	}
	if bytes.Contains(sealed, []byte(token)) {
		t.Error("the sealed token holds the token in clear")
	}
	if got, err := k.Open(7, sealed); err != nil || got != token {
		t.Errorf("Open(7) = %q, %v; want %q", got, err, token)
	}
	if _, err := k.Open(8, sealed); err == nil {
		t.Error("a token sealed for member 7 opens for member 8")
	}
	if _, err := NewInviteKeys("another secret of thirty-two bytes!!").Open(7, sealed); err == nil {
		t.Error("a token sealed under one secret opens under another")
	}
	if other, _, _ := k.New(7); other == token {
		t.Error("two invitations of one member have the same token")
	}
}

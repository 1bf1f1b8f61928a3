package authn

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"

	"golang.org/x/crypto/hkdf"
)

// Recovery codes are derived from a seed exactly as django-allauth derives
// them, so a seed moved between the two systems yields the same codes.
const (
	RecoveryCodeCount  = 10
	RecoveryCodeDigits = 8
	recoverySeedBytes  = 40 // 80 hex characters
)

// NewRecoverySeed returns a fresh random seed: 80 lower-case hex characters.
func NewRecoverySeed() string {
	b := make([]byte, recoverySeedBytes)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// RecoveryCodes derives the codes of seed as django-allauth does: one
// running HMAC-SHA1 keyed by the seed string is fed "  0,", "  1,", ... and
// after each input the first four bytes of its digest, read big-endian,
// modulo 10^8 and zero-padded, are the next code.
func RecoveryCodes(seed string) []string {
	h := hmac.New(sha1.New, []byte(seed))
	codes := make([]string, 0, RecoveryCodeCount)
	for i := range RecoveryCodeCount {
		fmt.Fprintf(h, "%3d,", i)
		v := binary.BigEndian.Uint32(h.Sum(nil)[:4]) % 100_000_000
		codes = append(codes, fmt.Sprintf("%0*d", RecoveryCodeDigits, v))
	}
	return codes
}

// RecoveryCodeIndex returns the position of code among the codes of seed,
// or -1. It compares with every code in constant time, so the time it takes
// says nothing about which code (or which prefix) matched.
func RecoveryCodeIndex(seed, code string) int {
	found := -1
	for i, c := range RecoveryCodes(seed) {
		if subtle.ConstantTimeCompare([]byte(c), []byte(code)) == 1 {
			found = i
		}
	}
	return found
}

// deriveKey derives a 32-byte key for purpose from secret with HKDF-SHA256,
// so that each use of SECRET_KEY has a key of its own.
func deriveKey(secret, purpose string) []byte {
	key := make([]byte, 32)
	r := hkdf.New(sha256.New, []byte(secret), nil, []byte("errata "+purpose))
	if _, err := io.ReadFull(r, key); err != nil {
		panic(err) // HKDF-SHA256 gives up to 8160 bytes
	}
	return key
}

// userCipher encrypts a user's secrets at rest with AES-256-GCM under a key
// derived from the server secret for one purpose. The user id is
// authenticated with the ciphertext, so a record copied to another user
// does not decrypt.
type userCipher struct {
	aead cipher.AEAD
}

// newUserCipher returns the cipher of secret for purpose.
func newUserCipher(secret, purpose string) userCipher {
	block, err := aes.NewCipher(deriveKey(secret, purpose))
	if err != nil {
		panic(err) // a 32-byte key is always valid
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return userCipher{aead: aead}
}

// seal encrypts plain for userID: a random nonce followed by the
// ciphertext.
func (c userCipher) seal(userID int64, plain []byte) []byte {
	nonce := make([]byte, c.aead.NonceSize(), c.aead.NonceSize()+len(plain)+c.aead.Overhead())
	rand.Read(nonce)
	return c.aead.Seal(nonce, nonce, plain, []byte(strconv.FormatInt(userID, 10)))
}

// open decrypts what seal returned for userID.
func (c userCipher) open(userID int64, sealed []byte) ([]byte, error) {
	n := c.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("authn: sealed value too short")
	}
	plain, err := c.aead.Open(nil, sealed[:n], sealed[n:], []byte(strconv.FormatInt(userID, 10)))
	if err != nil {
		return nil, fmt.Errorf("authn: open sealed value: %w", err)
	}
	return plain, nil
}

// SeedCipher encrypts recovery-code seeds at rest, bound to their user,
// under a key derived from the server secret for this purpose alone.
type SeedCipher struct {
	c userCipher
}

// NewSeedCipher returns the cipher of secret.
func NewSeedCipher(secret string) *SeedCipher {
	return &SeedCipher{c: newUserCipher(secret, "recovery-code seed encryption")}
}

// Seal encrypts the seed of userID: a random nonce followed by the
// ciphertext.
func (c *SeedCipher) Seal(userID int64, seed string) []byte {
	return c.c.seal(userID, []byte(seed))
}

// Open decrypts what Seal returned for userID.
func (c *SeedCipher) Open(userID int64, sealed []byte) (string, error) {
	seed, err := c.c.open(userID, sealed)
	return string(seed), err
}

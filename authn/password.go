package authn

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// Passwords are hashed with argon2id at the cost OWASP recommends for it
// (19 MiB, two passes, one lane) and stored as a PHC string, so that a hash
// carries its own parameters and a later change of cost can verify the old
// hashes and ask for a rehash (docs/accounts.md, Passwords).
const (
	argonMemory  = 19456 // KiB
	argonTime    = 2
	argonThreads = 1
	argonSaltLen = 16
	argonKeyLen  = 32
	argonVersion = argon2.Version // 19
)

// The bounds within which a stored PHC string is believed. A string outside
// them is refused before any work, so that a crafted or corrupted hash
// cannot make a verification allocate gigabytes or run for minutes.
const (
	phcMaxMemory  = 256 * 1024 // KiB: 256 MiB
	phcMaxTime    = 16
	phcMaxThreads = 16
	phcMinSalt    = 8
	phcMaxSalt    = 64
	phcMinKey     = 16
	phcMaxKey     = 64
	phcMaxLen     = 256 // bytes of the whole string, well above the longest valid one
)

// Password lengths, counted in characters (runes) as Django counts them.
const (
	PasswordMinLength = 8
	PasswordMaxLength = 1024
)

var b64 = base64.RawStdEncoding.Strict()

// phc is a decoded argon2id PHC string.
type phc struct {
	memory  uint32 // KiB
	time    uint32
	threads uint8
	salt    []byte
	key     []byte
}

// HashPassword returns the PHC string of password hashed with argon2id at
// the current cost and a fresh 16-byte salt:
// $argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>, both in unpadded standard
// base64. It computes one hash whatever else runs: servers go through a
// Hasher, which bounds how many run at once.
func HashPassword(password string) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("password salt: %w", err)
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return encodePHC(phc{memory: argonMemory, time: argonTime, threads: argonThreads, salt: salt, key: key}), nil
}

// VerifyPassword reports whether password matches the PHC string encoded,
// comparing in constant time, and whether encoded was made with other
// parameters than the current ones (the caller then stores HashPassword's
// answer). An empty, malformed or out-of-bounds encoded string is ok=false
// at once, without hashing: Hasher.Verify is what makes such a case cost
// the same as a wrong password.
func VerifyPassword(encoded, password string) (ok, needsRehash bool) {
	p, err := decodePHC(encoded)
	if err != nil {
		return false, false
	}
	return p.matches(password), p.outdated()
}

func (p phc) matches(password string) bool {
	key := argon2.IDKey([]byte(password), p.salt, p.time, p.memory, p.threads, uint32(len(p.key)))
	return subtle.ConstantTimeCompare(key, p.key) == 1
}

func (p phc) outdated() bool {
	return p.memory != argonMemory || p.time != argonTime || p.threads != argonThreads ||
		len(p.salt) != argonSaltLen || len(p.key) != argonKeyLen
}

func encodePHC(p phc) string {
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argonVersion, p.memory, p.time, p.threads,
		b64.EncodeToString(p.salt), b64.EncodeToString(p.key))
}

var errBadPHC = errors.New("authn: malformed argon2id hash")

// decodePHC parses an argon2id PHC string strictly: exactly the fields
// and order encodePHC writes, decimal numbers without sign or leading
// zero, unpadded canonical base64, and every value within the phcMax*
// bounds. Anything else is errBadPHC.
func decodePHC(s string) (phc, error) {
	var p phc
	if len(s) > phcMaxLen {
		return p, errBadPHC
	}
	// "", "argon2id", "v=19", "m=..,t=..,p=..", salt, key
	f := strings.Split(s, "$")
	if len(f) != 6 || f[0] != "" || f[1] != "argon2id" || f[2] != "v="+strconv.Itoa(argonVersion) {
		return p, errBadPHC
	}
	params := strings.Split(f[3], ",")
	if len(params) != 3 {
		return p, errBadPHC
	}
	m, okM := phcNumber(params[0], "m=", phcMaxMemory)
	t, okT := phcNumber(params[1], "t=", phcMaxTime)
	th, okP := phcNumber(params[2], "p=", phcMaxThreads)
	// argon2 needs at least 8 KiB of memory per lane.
	if !okM || !okT || !okP || t < 1 || th < 1 || m < 8*th {
		return p, errBadPHC
	}
	salt, errS := phcBytes(f[4], phcMinSalt, phcMaxSalt)
	key, errK := phcBytes(f[5], phcMinKey, phcMaxKey)
	if errS != nil || errK != nil {
		return p, errBadPHC
	}
	return phc{memory: m, time: t, threads: uint8(th), salt: salt, key: key}, nil
}

// phcNumber reads "<name><decimal>" with no sign, no leading zero and a
// value of at most max.
func phcNumber(s, name string, max uint32) (uint32, bool) {
	digits, ok := strings.CutPrefix(s, name)
	if !ok || digits == "" || len(digits) > 10 || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(digits, 10, 32)
	if err != nil || n > uint64(max) {
		return 0, false
	}
	return uint32(n), true
}

// phcBytes decodes unpadded standard base64 whose decoded length is within
// [min, max], checking the length before decoding. Any byte outside the
// alphabet is refused (the base64 decoder would skip CR and LF).
func phcBytes(s string, min, max int) ([]byte, error) {
	if n := b64.DecodedLen(len(s)); n < min || n > max {
		return nil, errBadPHC
	}
	for _, c := range []byte(s) {
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/') {
			return nil, errBadPHC
		}
	}
	b, err := b64.DecodeString(s)
	if err != nil || len(b) < min || len(b) > max {
		return nil, errBadPHC
	}
	return b, nil
}

// ErrBusy is what a Hasher answers a caller that waited longer than its
// wait for a free slot: the handler answers 503 with Retry-After.
var ErrBusy = errors.New("authn: too many password hashes at once")

// dummyPHC is verified in place of a missing or unusable hash, so that a
// sign-in for an unknown address, or for a user without a password, costs
// one argon2id hash at the current cost like a wrong password does. Its
// key is a fixed text that no argon2id output can be expected to equal.
var dummyPHC = phc{
	memory: argonMemory, time: argonTime, threads: argonThreads,
	salt: []byte("errata-no-user!!"),
	key:  []byte("errata: this hash matches none.."),
}

// A Hasher runs argon2id for the server: at most concurrent hashes or
// verifications at once, each taking argon2id's 19 MiB, so that a flood of
// sign-ins queues instead of taking the server's memory; a caller that
// waits longer than wait for a slot is answered ErrBusy.
type Hasher struct {
	slots chan struct{}
	wait  time.Duration
}

// NewHasher returns a Hasher that runs at most concurrent argon2id hashes
// at once (runtime.NumCPU() when concurrent ≤ 0) and makes a caller wait
// at most wait for a slot.
func NewHasher(concurrent int, wait time.Duration) *Hasher {
	if concurrent <= 0 {
		concurrent = runtime.NumCPU()
	}
	return &Hasher{slots: make(chan struct{}, concurrent), wait: wait}
}

// acquire takes a slot, or answers ErrBusy after h.wait, or ctx's error.
func (h *Hasher) acquire(ctx context.Context) error {
	select {
	case h.slots <- struct{}{}:
		return nil
	default:
	}
	timer := time.NewTimer(h.wait)
	defer timer.Stop()
	select {
	case h.slots <- struct{}{}:
		return nil
	case <-timer.C:
		return ErrBusy
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *Hasher) release() { <-h.slots }

// Hash is HashPassword within the Hasher's bound.
func (h *Hasher) Hash(ctx context.Context, password string) (string, error) {
	if err := h.acquire(ctx); err != nil {
		return "", err
	}
	defer h.release()
	return HashPassword(password)
}

// Verify is VerifyPassword within the Hasher's bound, except that an
// empty, malformed or out-of-bounds encoded string (an unknown address, a
// user without a password) still costs one argon2id hash at the current
// cost, against a fixed dummy hash, and answers ok=false: the time of an
// answer does not tell whether the address exists. err is ErrBusy or the
// context's error when no slot was had; ok is then false.
func (h *Hasher) Verify(ctx context.Context, encoded, password string) (ok, needsRehash bool, err error) {
	if err := h.acquire(ctx); err != nil {
		return false, false, err
	}
	defer h.release()
	p, err := decodePHC(encoded)
	if err != nil {
		dummyPHC.matches(password)
		return false, false, nil
	}
	return p.matches(password), p.outdated(), nil
}

// A PasswordError says why a new password is refused. Code is the error
// code of Django's password validators (password_too_short,
// password_too_common, password_too_similar) or, in their style,
// password_too_long; Message is a sentence for the person.
type PasswordError struct {
	Code    string
	Message string
}

func (e *PasswordError) Error() string { return e.Message }

// CheckNewPassword returns a *PasswordError when password may not become
// a password of the user whose address is email: fewer than 8 or more than
// 1,024 characters, equal to the address (ignoring case), or one of the
// 10,000 most common passwords (ignoring case). It returns nil otherwise.
func CheckNewPassword(password, email string) error {
	switch n := utf8.RuneCountInString(password); {
	case n < PasswordMinLength:
		return &PasswordError{Code: "password_too_short",
			Message: fmt.Sprintf("This password is too short. It must contain at least %d characters.", PasswordMinLength)}
	case n > PasswordMaxLength:
		return &PasswordError{Code: "password_too_long",
			Message: fmt.Sprintf("This password is too long. It must contain at most %d characters.", PasswordMaxLength)}
	}
	if email != "" && strings.EqualFold(password, email) {
		return &PasswordError{Code: "password_too_similar", Message: "The password is too similar to the email address."}
	}
	if isCommonPassword(password) {
		return &PasswordError{Code: "password_too_common", Message: "This password is too common."}
	}
	return nil
}

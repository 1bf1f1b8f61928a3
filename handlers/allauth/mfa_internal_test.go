package allauth

import (
	"errors"
	"strings"
	"testing"
	"time"

	"errata/authn"
)

// FuzzDecodeCode: any body of the routes that take a code decodes into
// {code} or is a 400, never a panic; the code, whatever it holds, is then
// matched as a TOTP code and a recovery code without a panic, and matches
// only when it is one once its spaces are gone.
func FuzzDecodeCode(f *testing.F) {
	f.Add([]byte(`{"code":"123456"}`))
	f.Add([]byte(`{"code":" 123 456 "}`))
	f.Add([]byte(`{"code":"40017382"}`))
	f.Add([]byte(`{"code":123456}`))
	f.Add([]byte("{\"code\":\"1\xff\"}"))
	f.Add([]byte(`{"code":"\u0000"}`))
	secret := []byte("12345678901234567890")
	seed := strings.Repeat("0", 80)
	now := time.Unix(1234567890, 0)
	f.Fuzz(func(t *testing.T, body []byte) {
		var b codeBody
		if err := decodeJSON(body, &b); err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != 400 {
				t.Fatalf("error %v, want a 400", err)
			}
			return
		}
		code := authn.TrimCode(b.Code)
		if step, ok := authn.MatchTOTP(secret, b.Code, now, 0); ok && authn.TOTPCode(secret, step) != code {
			t.Fatalf("%q matched step %d", b.Code, step)
		}
		if i := authn.RecoveryCodeIndex(seed, code); i >= 0 && authn.RecoveryCodes(seed)[i] != code {
			t.Fatalf("%q matched recovery code %d", b.Code, i)
		}
	})
}

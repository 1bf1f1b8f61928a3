package allauth

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeLogin: any body decodes into the login fields or is a 400,
// never a panic, and what decodes is valid UTF-8.
func FuzzDecodeLogin(f *testing.F) {
	f.Add([]byte(`{"email":"ann@example.com","password":"secret"}`))
	f.Add([]byte(`{"email":1}`))
	f.Add([]byte("{\"email\":\"a\xff\"}"))
	f.Add([]byte(`{"email":"a"} []`))
	f.Add([]byte(`{"password":"\u0000"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var b loginBody
		err := decodeJSON(body, &b)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != 400 {
				t.Fatalf("error %v, want a 400", err)
			}
			return
		}
		if !utf8.ValidString(b.Email) || !utf8.ValidString(b.Password) {
			t.Fatalf("decoded invalid UTF-8 from %q", body)
		}
		if checkEmail(b.Email, "email") == nil && (strings.ContainsRune(b.Email, 0) || len(b.Email) > maxEmail) {
			t.Fatalf("checkEmail accepted %q", b.Email)
		}
	})
}

package diftest

// AppendVLQ appends the base64 VLQ of v to b, as source maps write the
// numbers of their mappings: for the tests that build maps.
func AppendVLQ(b []byte, v int) []byte {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	u := uint(v) << 1
	if v < 0 {
		u = uint(-v)<<1 | 1
	}
	for {
		d := u & 31
		u >>= 5
		if u != 0 {
			d |= 32
		}
		b = append(b, alphabet[d])
		if u == 0 {
			return b
		}
	}
}

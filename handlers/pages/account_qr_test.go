package pages

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"rsc.io/qr"
)

// svgRun is one rectangle of qrSVG's path: a run of dark modules.
var svgRun = regexp.MustCompile(`^M(\d+) (\d+)h(\d+)v1h-(\d+)z`)

// TestQRSVG reads the modules back from the SVG's path and compares them
// with the encoder's bitmap, module by module.
func TestQRSVG(t *testing.T) {
	for _, text := range []string{
		"otpauth://totp/errata:ann%40example.com?secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP&issuer=errata",
		"A",
		strings.Repeat("x", 300),
	} {
		svg, err := qrSVG(text, "QR code <of> the address")
		if err != nil {
			t.Fatal(err)
		}
		s := string(svg)
		for _, want := range []string{`role="img"`, `<title id="qr-title">QR code &lt;of&gt; the address</title>`, `viewBox="-4 -4 `} {
			if !strings.Contains(s, want) {
				t.Errorf("the SVG has no %s: %s", want, s)
			}
		}
		c, err := qr.Encode(text, qr.M)
		if err != nil {
			t.Fatal(err)
		}
		_, d, ok := strings.Cut(s, `<path fill="#000" d="`)
		if !ok {
			t.Fatalf("no path in %s", s)
		}
		d, _, _ = strings.Cut(d, `"`)
		dark := make([]bool, c.Size*c.Size)
		for d != "" {
			m := svgRun.FindStringSubmatch(d)
			if m == nil {
				t.Fatalf("the path does not read as runs at %.40q", d)
			}
			x, _ := strconv.Atoi(m[1])
			y, _ := strconv.Atoi(m[2])
			w, _ := strconv.Atoi(m[3])
			if m[3] != m[4] || x+w > c.Size || y >= c.Size {
				t.Fatalf("a run out of the code: %q", m[0])
			}
			for i := x; i < x+w; i++ {
				if dark[y*c.Size+i] {
					t.Fatalf("module %d,%d drawn twice", i, y)
				}
				dark[y*c.Size+i] = true
			}
			d = d[len(m[0]):]
		}
		for y := 0; y < c.Size; y++ {
			for x := 0; x < c.Size; x++ {
				if dark[y*c.Size+x] != c.Black(x, y) {
					t.Fatalf("%q: module %d,%d dark %t in the SVG, %t in the code", text, x, y, dark[y*c.Size+x], c.Black(x, y))
				}
			}
		}
	}
}

package pages

import (
	"fmt"
	"html/template"
	"strings"

	"rsc.io/qr"
)

// qrQuietZone is the light margin around a QR code, in modules, that
// readers need (4 in ISO/IEC 18004).
const qrQuietZone = 4

// qrSVG returns the QR code of text as an inline SVG image: a light
// square and one path of the dark modules, a rectangle for each run of
// them along a row. Inline, because the pages' CSP allows no data: URI,
// and the image needs no route of its own. label names the image for
// those who cannot see it.
func qrSVG(text, label string) (template.HTML, error) {
	c, err := qr.Encode(text, qr.M)
	if err != nil {
		return "", err
	}
	var d strings.Builder
	for y := 0; y < c.Size; y++ {
		for x := 0; x < c.Size; {
			if !c.Black(x, y) {
				x++
				continue
			}
			run := 1
			for c.Black(x+run, y) {
				run++
			}
			fmt.Fprintf(&d, "M%d %dh%dv1h-%dz", x, y, run, run)
			x += run
		}
	}
	side := c.Size + 2*qrQuietZone
	svg := fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" class="qr" role="img" aria-labelledby="qr-title" viewBox="%d %d %d %d" shape-rendering="crispEdges">`+
		`<title id="qr-title">%s</title>`+
		`<rect x="%d" y="%d" width="%d" height="%d" fill="#fff"/>`+
		`<path fill="#000" d="%s"/></svg>`,
		-qrQuietZone, -qrQuietZone, side, side, template.HTMLEscapeString(label),
		-qrQuietZone, -qrQuietZone, side, side, d.String())
	return template.HTML(svg), nil //nolint:gosec // made here of numbers and an escaped label
}

// node oracle.js MAP GENERATED OUT writes the original position of every
// position of GENERATED as npm source-map 0.7.4 and @jridgewell/trace-mapping
// 0.3.25 give it, failing where they disagree. How testdata was made:
// esbuild 0.24.2 src/main.js --bundle --minify --sourcemap --platform=node,
// terser 5.36.0 over its output, and index.js.map a map of two sections.
const fs = require("fs");
const T = process.env.T;
const { SourceMapConsumer } = require(T + "/source-map-0.7.4/node_modules/source-map");
const { AnyMap, originalPositionFor } = require(T + "/trace-mapping-0.3.25/node_modules/@jridgewell/trace-mapping");
(async () => {
  const raw = fs.readFileSync(process.argv[2], "utf8");
  const gen = fs.readFileSync(process.argv[3], "utf8").split("\n");
  const tm = new AnyMap(raw);
  const out = [];
  await SourceMapConsumer.with(raw, null, (c) => {
    gen.forEach((text, li) => {
      for (let col = 0; col <= text.length; col++) {
        const a = c.originalPositionFor({ line: li + 1, column: col });
        const b = originalPositionFor(tm, { line: li + 1, column: col });
        const agree = a.source === b.source && a.line === b.line && a.column === b.column && a.name === b.name;
        // source-map 0.7.4 puts a section's first column in the section
        // before it (its offsets are 1-based against a 0-based column):
        // there, and only there, trace-mapping is the oracle.
        const sectionStart = (JSON.parse(raw).sections || []).some((s) => s.offset.line === li && s.offset.column === col);
        if (!agree && !sectionStart) {
          console.error("disagree", li, col, a, b); process.exit(1);
        }
        out.push([li, col, b.source, b.line, b.column, b.name]);
      }
    });
  });
  fs.writeFileSync(process.argv[4], JSON.stringify(out));
})();

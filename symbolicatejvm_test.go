package main

import (
	"archive/zip"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// javaApp is a small program whose discount lookup throws through four
// classes; ProGuard inlines some of its methods.
var javaApp = map[string]string{
	"com/shop/Main.java": `package com.shop;

public class Main {
    public static void main(String[] args) {
        try {
            new Checkout().run(args.length > 0 ? args[0] : "BOGUS");
        } catch (RuntimeException e) {
            e.printStackTrace(System.out);
        }
    }
}
`,
	"com/shop/Checkout.java": `package com.shop;

public class Checkout {
    private final Cart cart = new Cart();

    public void run(String code) {
        cart.add(10, 2);
        cart.add(5, 1);
        System.out.println(total(code));
    }

    private int total(String code) {
        return cart.applyDiscount(code);
    }
}
`,
	"com/shop/Cart.java": `package com.shop;

import java.util.ArrayList;
import java.util.List;

public class Cart {
    private final List<Integer> prices = new ArrayList<>();

    public void add(int price, int quantity) {
        prices.add(price * quantity);
    }

    public int applyDiscount(String code) {
        int sum = 0;
        for (int p : prices) {
            sum += p;
        }
        int rate = Discounts.rateFor(code);
        return sum * (100 - rate) / 100;
    }
}
`,
	"com/shop/Discounts.java": `package com.shop;

public final class Discounts {
    private Discounts() {}

    public static int rateFor(String code) {
        if (code.equals("SAVE10")) {
            return 10;
        }
        return lookup(code);
    }

    private static int lookup(String code) {
        throw new UnknownDiscountException("unknown discount code " + code);
    }
}
`,
	"com/shop/UnknownDiscountException.java": `package com.shop;

public class UnknownDiscountException extends RuntimeException {
    public UnknownDiscountException(String message) {
        super(message);
    }
}
`,
}

// javaLibraryJar writes a jar of the JDK's java.lang, java.io and
// java.util classes with their class file version lowered to Java 8's:
// Debian's ProGuard 6.2.2 cannot read JDK 17's runtime classes, and it
// needs the library's class hierarchy to optimize.
func javaLibraryJar(t *testing.T, dir string) string {
	t.Helper()
	javac, err := exec.LookPath("javac")
	if err != nil {
		t.Fatalf("javac: %v (dev.sh test installs a JDK)", err)
	}
	home := filepath.Dir(filepath.Dir(mustEvalSymlinks(t, javac)))
	extracted := filepath.Join(dir, "jdk")
	runToolIn(t, dir, filepath.Join(home, "bin", "jimage"), "extract", "--dir", extracted,
		"--include", "regex:/java.base/java/(lang|io|util)/.*", filepath.Join(home, "lib", "modules"))
	jar := filepath.Join(dir, "rt.jar")
	out, err := os.Create(jar)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(out)
	base := filepath.Join(extracted, "java.base")
	err = filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".class") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil || len(b) < 8 {
			return fmt.Errorf("%s: %v", path, err)
		}
		b[6], b[7] = 0, 52 // major version: Java 8
		rel, _ := filepath.Rel(base, path)
		w, err := zw.Create(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return jar
}

func mustEvalSymlinks(t *testing.T, path string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var javaFrameRE = regexp.MustCompile(`^\s+at ([\w.$]+)\.([\w$<>]+)\(([^:)]+):(\d+)\)$`)

// javaTrace runs a jar and returns the exception class and the frames it
// printed, callee first, as "class.method(file:line)".
func javaTrace(t *testing.T, dir, jar string) (string, []string) {
	t.Helper()
	cmd := exec.Command("java", "-jar", jar)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("java -jar %s: %v\n%s", jar, err, out)
	}
	return readJavaTrace(t, string(out))
}

func readJavaTrace(t *testing.T, text string) (string, []string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(text), "\n")
	exception, _, _ := strings.Cut(lines[0], ":")
	var frames []string
	for _, l := range lines[1:] {
		if m := javaFrameRE.FindStringSubmatch(l); m != nil {
			frames = append(frames, fmt.Sprintf("%s.%s(%s:%s)", m[1], m[2], m[3], m[4]))
		}
	}
	if len(frames) < 3 {
		t.Fatalf("a trace of %d frames:\n%s", len(frames), text)
	}
	return exception, frames
}

// TestSymbolicateJVMEndToEnd compiles a Java program with javac --release 8
// -g, obfuscates it with Debian's ProGuard (inlining methods), runs both
// jars, uploads the mapping with sentry-cli and asks errata to remap the
// obfuscated trace: the answer must be the unobfuscated trace, which is
// also what ProGuard's retrace prints.
func TestSymbolicateJVMEndToEnd(t *testing.T) {
	t.Parallel()
	proguard := toolEnv(t, "PROGUARD")
	retrace := toolEnv(t, "PROGUARD_RETRACE")
	dir := t.TempDir()
	var sources []string
	for name, content := range javaApp {
		p := filepath.Join(dir, "src", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		sources = append(sources, p)
	}
	runToolIn(t, dir, "javac", append([]string{"--release", "8", "-g", "-d", "classes"}, sources...)...)
	runToolIn(t, filepath.Join(dir, "classes"), "jar", "cfe", "../app.jar", "com.shop.Main", "com")
	rt := javaLibraryJar(t, dir)
	config := strings.Join([]string{
		"-injars app.jar", "-outjars app.min.jar", "-libraryjars " + rt,
		"-keep public class com.shop.Main { public static void main(java.lang.String[]); }",
		"-keepattributes SourceFile,LineNumberTable", "-renamesourcefileattribute SourceFile",
		"-printmapping mapping.txt", "-dontwarn", "-ignorewarnings",
	}, "\n")
	if err := os.WriteFile(filepath.Join(dir, "app.pro"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	runToolIn(t, dir, proguard, "@app.pro")

	wantException, want := javaTrace(t, dir, "app.jar")
	obfException, obfuscated := javaTrace(t, dir, "app.min.jar")
	if slices.Equal(want, obfuscated) {
		t.Fatalf("ProGuard changed nothing: %q", obfuscated)
	}
	minTrace := filepath.Join(dir, "min.txt")
	out, _ := exec.Command("java", "-jar", filepath.Join(dir, "app.min.jar")).Output()
	os.WriteFile(minTrace, out, 0o644)
	retraced, err := exec.Command("java", "-jar", retrace, filepath.Join(dir, "mapping.txt"), minTrace).Output()
	if err != nil {
		t.Fatalf("retrace: %v", err)
	}
	if e, frames := readJavaTrace(t, string(retraced)); e != wantException || !slices.Equal(frames, want) {
		t.Fatalf("retrace printed %s %q, the program %s %q", e, frames, wantException, want)
	}

	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	setupAcme(t, s)
	cli := newSentryCLI(t, "SENTRY_CLI_3", s, "acme").in(dir)
	mapping := filepath.Join(dir, "mapping.txt")
	uuid := proguardUUID(t, mapping)
	cli.run(t, "proguard", "upload", mapping).expect(t, 0)
	difOfType(t, s, "acme", uuid, "proguard")
	// A mapping used by a resolution counts as used for retention.
	s.db(t).Exec(t.Context(), `UPDATE files SET date_used = now() - interval '10 days'`)

	var frames []map[string]any
	for _, f := range obfuscated {
		m := javaFrameRE.FindStringSubmatch("\tat " + f)
		line, _ := strconv.Atoi(m[4])
		frames = append(frames, map[string]any{"module": m[1], "function": m[2], "filename": m[3], "lineno": line})
	}
	obfModule, obfType := splitJavaClass(obfException)
	for _, order := range []string{"callee_first", "caller_first"} {
		t.Run(order, func(t *testing.T) {
			sent := slices.Clone(frames)
			if order == "caller_first" {
				slices.Reverse(sent)
			}
			body := map[string]any{
				"exceptions":  []any{map[string]any{"type": obfType, "module": obfModule}},
				"stacktraces": []any{map[string]any{"frames": sent}},
				"modules":     []any{map[string]any{"type": "proguard", "uuid": uuid}, map[string]any{"type": "proguard", "uuid": "00000000-0000-0000-0000-000000000001"}},
				"options":     map[string]any{"frame_order": order},
			}
			var got struct {
				Exceptions []struct {
					Type   string `json:"type"`
					Module string `json:"module"`
				} `json:"exceptions"`
				Stacktraces []struct {
					Frames []struct {
						Function      string `json:"function"`
						Module        string `json:"module"`
						Filename      string `json:"filename"`
						Lineno        int    `json:"lineno"`
						OriginalIndex int    `json:"original_index"`
					} `json:"frames"`
				} `json:"stacktraces"`
				Errors []struct {
					UUID string `json:"uuid"`
					Type string `json:"type"`
				} `json:"errors"`
			}
			symbolicateJVM(t, s, body, &got)
			var remapped []string
			for _, f := range got.Stacktraces[0].Frames {
				remapped = append(remapped, fmt.Sprintf("%s.%s(%s:%d)", f.Module, f.Function, f.Filename, f.Lineno))
			}
			wantFrames := slices.Clone(want)
			if order == "caller_first" {
				slices.Reverse(wantFrames)
			}
			if !slices.Equal(remapped, wantFrames) {
				t.Errorf("errata remapped\n%s\nthe program printed\n%s", strings.Join(remapped, "\n"), strings.Join(wantFrames, "\n"))
			}
			if len(got.Exceptions) != 1 || got.Exceptions[0].Module+"."+got.Exceptions[0].Type != wantException {
				t.Errorf("exception %+v, want %s", got.Exceptions, wantException)
			}
			if len(got.Errors) != 1 || got.Errors[0].Type != "missing" || got.Errors[0].UUID != "00000000-0000-0000-0000-000000000001" {
				t.Errorf("errors %+v, want the unknown UUID missing", got.Errors)
			}
		})
	}
	waitFor(t, 5*time.Second, "the mapping counted as used", func() bool {
		return s.count(t, `SELECT count(*) FROM files WHERE date_used > now() - interval '1 hour'`) > 0
	})
}

// splitJavaClass splits a.b.C into a.b and C.
func splitJavaClass(name string) (string, string) {
	i := strings.LastIndexByte(name, '.')
	return name[:i], name[i+1:]
}

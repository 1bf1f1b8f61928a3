package main

import (
	"fmt"
	"io"
	"runtime/debug"
)

// version is stamped by the build: go build -ldflags "-X main.version=...".
// It is the one variable the linker can set, hence a package variable.
var version string

// buildVersion is the stamped version, else what the Go toolchain recorded
// in the binary, else "devel".
func buildVersion() string {
	info, _ := debug.ReadBuildInfo()
	return versionOf(version, info)
}

// versionOf picks the version of a build: the stamp, else the VCS revision
// (with "-dirty" for uncommitted changes), else the module's version.
func versionOf(stamp string, info *debug.BuildInfo) string {
	if stamp != "" {
		return stamp
	}
	if info == nil {
		return "devel"
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "-dirty"
		}
	}
	if rev != "" {
		return rev + dirty
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	return "devel"
}

// runVersion is `errata version`: it prints the version of this build.
func runVersion(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("version: unexpected argument %q", args[0])
	}
	fmt.Fprintln(stdout, buildVersion())
	return nil
}

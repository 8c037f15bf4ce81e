package rematch

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/anchore/clio"
	"github.com/anchore/grype/cmd/grype/cli/options"
	"github.com/anchore/grype/grype"
	"github.com/anchore/grype/grype/distro"
	"github.com/anchore/grype/grype/match"
	"github.com/anchore/grype/grype/matcher"
	"github.com/anchore/grype/grype/matcher/dotnet"
	"github.com/anchore/grype/grype/matcher/dpkg"
	"github.com/anchore/grype/grype/matcher/golang"
	"github.com/anchore/grype/grype/matcher/hex"
	"github.com/anchore/grype/grype/matcher/java"
	"github.com/anchore/grype/grype/matcher/javascript"
	"github.com/anchore/grype/grype/matcher/python"
	"github.com/anchore/grype/grype/matcher/rpm"
	"github.com/anchore/grype/grype/matcher/ruby"
	"github.com/anchore/grype/grype/matcher/rust"
	"github.com/anchore/grype/grype/matcher/stock"
	"github.com/anchore/grype/grype/pkg"
	"github.com/anchore/grype/grype/version"
	"github.com/anchore/grype/grype/vex"
	"github.com/anchore/grype/grype/vulnerability"
	syftPkg "github.com/anchore/syft/syft/pkg"
)

// The functions below mirror cmd/grype/cli/commands/root.go of Grype
// v0.121.2 (runGrype, getMatcherConfig, getProviderConfig, getFixChannels),
// which are not exported, applied to the CLI's own defaults
// (options.DefaultGrype). Keeping them line for line is what makes a
// re-match equal to `grype sbom:FILE`; revisit them on every Grype upgrade.

// grypeModule is the module whose version names the tool in reports.
const grypeModule = "github.com/anchore/grype"

// grypeVersion is the version of grypeModule in go.mod, for binaries built
// without module information (tests); TestGrypeVersionMatchesGoMod keeps it
// in step.
const grypeVersion = "0.121.2"

// identification names the tool in the report the way the Grype CLI does
// ("grype", version without the leading v).
func identification() clio.Identification {
	bi, _ := debug.ReadBuildInfo()
	return clio.Identification{Name: "grype", Version: grypeVersionIn(bi)}
}

// grypeVersionIn reads the Grype version a binary was built with from its
// build information (grypeVersion without any).
func grypeVersionIn(bi *debug.BuildInfo) string {
	v := grypeVersion
	if bi == nil {
		return v
	}
	for _, d := range bi.Deps {
		if d.Path != grypeModule {
			continue
		}
		v = strings.TrimPrefix(d.Version, "v")
		// A replacement by another version names that one; one by a folder
		// (the patched copy of matcher/third_party/patches) has none, "(devel)"
		// in a built binary, and is still the version it patches.
		if d.Replace != nil && d.Replace.Version != "" && d.Replace.Version != "(devel)" {
			v = strings.TrimPrefix(d.Replace.Version, "v")
		}
	}
	return v
}

// GrypeVersion is the Grype release the matcher matches with, as reports
// name it (no leading v).
func GrypeVersion() string { return identification().Version }

// ignoreLinuxKernelHeaders is root.go's rule set, applied because
// MatchUpstreamKernelHeaders is false by default.
var ignoreLinuxKernelHeaders = []match.IgnoreRule{
	{Package: match.IgnoreRulePackage{Name: "kernel-headers", UpstreamName: "kernel", Type: string(syftPkg.RpmPkg)}, MatchType: match.ExactIndirectMatch},
	{Package: match.IgnoreRulePackage{Name: "linux(-.*)?-headers-.*", UpstreamName: "linux.*", Type: string(syftPkg.DebPkg)}, MatchType: match.ExactIndirectMatch},
	{Package: match.IgnoreRulePackage{Name: "linux-libc-dev", UpstreamName: "linux", Type: string(syftPkg.DebPkg)}, MatchType: match.ExactIndirectMatch},
	{Package: match.IgnoreRulePackage{Name: "linux-kbuild-.*", UpstreamName: "linux.*", Type: string(syftPkg.DebPkg)}, MatchType: match.ExactIndirectMatch},
}

// grypeConfig is what runGrype derives from the CLI options for one scan.
type grypeConfig struct {
	opts        *options.Grype
	ignore      []match.IgnoreRule
	provider    pkg.ProviderConfig
	matcherConf matcher.Config
}

func defaultGrypeConfig(id clio.Identification) (*grypeConfig, error) {
	opts := options.DefaultGrype(id)
	if err := opts.PostLoad(); err != nil {
		return nil, fmt.Errorf("grype defaults: %w", err)
	}
	if err := opts.Match.PostLoad(); err != nil {
		return nil, fmt.Errorf("grype match defaults: %w", err)
	}
	var ignore []match.IgnoreRule
	ignore = append(ignore, opts.Ignore...)
	if !opts.MatchUpstreamKernelHeaders {
		ignore = append(ignore, ignoreLinuxKernelHeaders...)
	}
	channels, err := fixChannels(opts.FixChannel)
	if err != nil {
		return nil, err
	}
	return &grypeConfig{
		opts:   opts,
		ignore: ignore,
		provider: pkg.ProviderConfig{
			SyftProviderConfig: pkg.SyftProviderConfig{Exclusions: opts.Exclusions},
			SynthesisConfig: pkg.SynthesisConfig{
				GenerateMissingCPEs: opts.GenerateMissingCPEs,
				Distro:              pkg.DistroConfig{FixChannels: channels},
			},
		},
		matcherConf: matcherConfig(opts),
	}, nil
}

// vulnerabilityMatcher builds root.go's VulnerabilityMatcher. It holds
// per-scan state, so every Match builds its own; the provider is shared, and
// so is cache when it is not nil (Grype's matchers answer through it); rec,
// when not nil, is the match's footprint recorder.
func (c *grypeConfig) vulnerabilityMatcher(vp vulnerability.Provider, cache *matchCache, rec *recorder) (*grype.VulnerabilityMatcher, error) {
	vexProcessor, err := vex.NewProcessor(vex.ProcessorOptions{Documents: c.opts.VexDocuments, IgnoreRules: c.ignore})
	if err != nil {
		return nil, fmt.Errorf("create VEX processor: %w", err)
	}
	matchers := matcher.NewDefaultMatchers(c.matcherConf)
	if cache != nil {
		matchers = withCache(matchers, cache, rec)
	}
	return &grype.VulnerabilityMatcher{
		VulnerabilityProvider:      vp,
		IgnoreRules:                c.ignore,
		NormalizeByCVE:             c.opts.ByCVE,
		FailSeverity:               c.opts.FailOnSeverity(),
		Matchers:                   matchers,
		VexProcessor:               vexProcessor,
		Alerts:                     grype.AlertsConfig{EnableEOLDistroWarnings: c.opts.Alerts.EnableEOLDistroWarnings},
		IncludeMatcherSuppressions: c.opts.IncludeMatcherSuppressions,
	}, nil
}

func matcherConfig(opts *options.Grype) matcher.Config {
	return matcher.Config{
		Java: java.MatcherConfig{
			ExternalSearchConfig: opts.ExternalSources.ToJavaMatcherConfig(),
			UseCPEs:              opts.Match.Java.UseCPEs,
		},
		Ruby:       ruby.MatcherConfig(opts.Match.Ruby),
		Python:     python.MatcherConfig(opts.Match.Python),
		Dotnet:     dotnet.MatcherConfig(opts.Match.Dotnet),
		Javascript: javascript.MatcherConfig(opts.Match.Javascript),
		Golang: golang.MatcherConfig{
			UseCPEs:                                opts.Match.Golang.UseCPEs,
			AlwaysUseCPEForStdlib:                  opts.Match.Golang.AlwaysUseCPEForStdlib,
			AllowMainModulePseudoVersionComparison: opts.Match.Golang.AllowMainModulePseudoVersionComparison,
		},
		Rust:  rust.MatcherConfig(opts.Match.Rust),
		Hex:   hex.MatcherConfig(opts.Match.Hex),
		Stock: stock.MatcherConfig(opts.Match.Stock),
		Dpkg: dpkg.MatcherConfig{
			MissingEpochStrategy: opts.Match.Dpkg.MissingEpochStrategy,
			UseCPEsForEOL:        opts.Match.Dpkg.UseCPEsForEOL,
			UseCPEs:              opts.Match.Dpkg.UseCPEs,
		},
		Rpm: rpm.MatcherConfig{
			MissingEpochStrategy: opts.Match.Rpm.MissingEpochStrategy,
			UseCPEsForEOL:        opts.Match.Rpm.UseCPEsForEOL,
			UseCPEs:              opts.Match.Rpm.UseCPEs,
		},
	}
}

// fixChannels is root.go's getFixChannels, returning errors where it panics.
func fixChannels(o options.FixChannels) ([]distro.FixChannel, error) {
	defaults := distro.DefaultFixChannels()
	eus := defaults.Get("eus")
	esm := defaults.Get("esm")
	if eus == nil || esm == nil {
		return nil, fmt.Errorf("grype's default fix channels lack eus or esm")
	}
	eus.Apply = distro.FixChannelEnabled(o.RedHatEUS.Apply)
	if o.RedHatEUS.Versions != "" {
		c, err := version.GetConstraint(o.RedHatEUS.Versions, version.SemanticFormat)
		if err != nil {
			return nil, fmt.Errorf("eus fix channel versions: %w", err)
		}
		eus.Versions = c
	}
	esm.Apply = distro.FixChannelEnabled(o.UbuntuESM.Apply)
	if o.UbuntuESM.Versions != "" {
		c, err := version.GetConstraint(o.UbuntuESM.Versions, version.SemanticFormat)
		if err != nil {
			return nil, fmt.Errorf("esm fix channel versions: %w", err)
		}
		esm.Versions = c
	}
	return []distro.FixChannel{
		{Name: eus.Name, IDs: eus.IDs, Versions: eus.Versions, Apply: eus.Apply},
		{Name: esm.Name, IDs: esm.IDs, Versions: esm.Versions, Apply: esm.Apply},
	}, nil
}

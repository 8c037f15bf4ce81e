package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/output"
	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/resultsapi"
	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/resultsclient"
)

type changesOptions struct {
	*options
	since       string
	minSeverity string
	limit       int
}

func newChangesCommand(o *options) *cobra.Command {
	co := &changesOptions{options: o}
	cmd := &cobra.Command{
		Use:   "changes [--since 24h] [--min-severity SEVERITY]",
		Short: "List the fleet's findings changes (new and resolved findings per report), newest first",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return co.run(cmd.Context()) },
	}
	cmd.Flags().StringVar(&co.since, "since", "24h", "how far back: a duration (90m, 24h, 7d) or an RFC 3339 time")
	cmd.Flags().StringVar(&co.minSeverity, "min-severity", "", "only changes with a new or resolved finding of this severity or worse")
	cmd.Flags().IntVar(&co.limit, "limit", 200, fmt.Sprintf("at most this many changes (up to %d)", resultsclient.MaxItems))
	return cmd
}

// parseSince reads --since: a duration back from now (with a "d" for days)
// or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if days, ok := strings.CutSuffix(s, "d"); ok && err != nil {
		n, nerr := strconv.Atoi(days)
		d, err = time.Duration(n)*24*time.Hour, nerr
	}
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf("--since %q: want a positive duration (90m, 24h, 7d) or an RFC 3339 time", s)
	}
	return now.Add(-d), nil
}

func (o *changesOptions) run(ctx context.Context) error {
	format, err := o.format()
	if err != nil {
		return err
	}
	if err := checkSeverity(o.minSeverity); err != nil {
		return err
	}
	now := o.now()
	since, err := parseSince(o.since, now)
	if err != nil {
		return err
	}
	if o.limit < 1 || o.limit > resultsclient.MaxItems {
		return fmt.Errorf("--limit %d: want 1 to %d", o.limit, resultsclient.MaxItems)
	}
	rc, err := o.results()
	if err != nil {
		return err
	}
	items, err := rc.Changes(ctx, resultsclient.ChangeOptions{Since: since, MinSeverity: o.minSeverity, Max: o.limit})
	if err != nil {
		return err
	}
	if format == output.JSON || format == output.YAML {
		return output.Data(o.streams.Out, format, resultsapi.ChangeList{Items: output.List(items)})
	}
	if len(items) == 0 {
		_, _ = fmt.Fprintf(o.streams.ErrOut, "No changes since %s.\n", since.UTC().Format(time.RFC3339))
		return nil
	}
	headers := []string{"CHANGED", "IMAGE", "DIGEST", "CAUSE", "NEW", "RESOLVED", "NEW-IN-KEV"}
	if format == output.Wide {
		headers = append(headers, "NEW-IDS", "RESOLVED-IDS", "KEV-IDS", "DB-BUILT")
	}
	t := output.NewTable(o.streams.Out, headers...)
	for _, c := range items {
		cause := c.Cause
		if c.Baseline {
			cause += " (first report)"
		}
		cells := []any{output.Age(c.ChangedAt, now), repository(c.Image), output.ShortDigest(c.Digest), cause, counts(c.NewCounts), counts(c.ResolvedCounts), c.KevAddedCount}
		if format == output.Wide {
			cells = append(cells, ids(c.New, c.Truncated), ids(c.Resolved, c.Truncated), ids(c.KevAdded, c.Truncated), c.DbBuilt)
		}
		t.Row(cells...)
	}
	return t.Flush()
}

func ids(fs []resultsapi.ChangedFinding, truncated bool) string {
	seen := map[string]bool{}
	var out []string
	for _, f := range fs {
		if !seen[f.Id] {
			seen[f.Id] = true
			out = append(out, f.Id)
		}
	}
	s := strings.Join(out, ",")
	if truncated && s != "" {
		s += ",…"
	}
	return s
}

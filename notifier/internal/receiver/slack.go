package receiver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/crowsnest-dev/crowsnest/notifier/internal/state"
)

// Slack limits: a message has at most 50 blocks, a section text 3000
// characters.
const (
	slackMaxBlocks = 50
	slackMaxText   = 3000
)

// SlackMessage is an incoming-webhook payload with Block Kit blocks.
type SlackMessage struct {
	Text   string       `json:"text"`
	Blocks []SlackBlock `json:"blocks"`
}

// SlackBlock is a Block Kit block (header, section, context, divider).
type SlackBlock struct {
	Type     string       `json:"type"`
	Text     *SlackText   `json:"text,omitempty"`
	Elements []*SlackText `json:"elements,omitempty"`
}

// SlackText is a Block Kit text object.
type SlackText struct {
	Type string `json:"type"` // plain_text or mrkdwn
	Text string `json:"text"`
}

// Slack renders a group as one Block Kit message. Slack has no
// idempotency key: the group id is in the context line, so a duplicate
// after a crash is recognisable.
func Slack(g *state.Group, dashboard string) SlackMessage {
	head := fmt.Sprintf("Crowsnest: %d %s (route %s)", len(g.Items), plural(len(g.Items), "notification", "notifications"), g.Route)
	m := SlackMessage{Text: head, Blocks: []SlackBlock{{Type: "header", Text: &SlackText{Type: "plain_text", Text: clip(head, 150)}}}}
	for i, it := range g.Items {
		if len(m.Blocks) >= slackMaxBlocks-2 {
			m.Blocks = append(m.Blocks, section(fmt.Sprintf("…and %d more", len(g.Items)-i+g.Omitted)))
			break
		}
		text := "*" + escape(Title(it)) + "*"
		for _, l := range Lines(it) {
			text += "\n• " + escape(l)
		}
		if link := ImageLink(dashboard, it.Digest); link != "" {
			text += "\n<" + link + "|Open in the dashboard>"
		}
		m.Blocks = append(m.Blocks, section(text))
	}
	m.Blocks = append(m.Blocks, SlackBlock{Type: "context", Elements: []*SlackText{{Type: "mrkdwn", Text: "group " + g.ID}}})
	return m
}

func section(text string) SlackBlock {
	return SlackBlock{Type: "section", Text: &SlackText{Type: "mrkdwn", Text: clip(text, slackMaxText)}}
}

// escape escapes Slack's control characters in mrkdwn text.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

type slack struct{ url string }

func (s *slack) request(ctx context.Context, g *state.Group, dashboard string) (*http.Request, error) {
	body, err := json.Marshal(Slack(g, dashboard))
	if err != nil {
		return nil, fmt.Errorf("encode slack message: %w", err)
	}
	req, err := newRequest(ctx, s.url, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}

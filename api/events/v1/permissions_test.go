package v1_test

import (
	"slices"
	"strings"
	"testing"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

// TestOperatorPermissionsAreExactlyWhatItUses pins the operator's NATS
// permissions to what it does: publish its three events, create the stream
// (not update it: results-api, the StreamOwner, does), and run its one
// durable consumer of crowsnest.report.deleted (create with that filter, info, pull, ack). No wildcard over consumers, no
// other consumer, no consumer deletion, and it receives messages only on its
// inbox (the consumer delivers there).
func TestOperatorPermissionsAreExactlyWhatItUses(t *testing.T) {
	p := eventsv1.Permissions(eventsv1.UserOperator)
	want := []string{
		eventsv1.SubjectImageNeeded, eventsv1.SubjectJobDone, eventsv1.SubjectInventorySnapshot,
		"$JS.API.INFO", "$JS.API.STREAM.INFO.CROWSNEST", "$JS.API.STREAM.CREATE.CROWSNEST",
		"$JS.API.CONSUMER.CREATE.CROWSNEST.operator-report-deleted.crowsnest.report.deleted",
		"$JS.API.CONSUMER.INFO.CROWSNEST.operator-report-deleted",
		"$JS.API.CONSUMER.MSG.NEXT.CROWSNEST.operator-report-deleted",
		"$JS.ACK.CROWSNEST.operator-report-deleted.>",
	}
	if !slices.Equal(p.PublishAllow, want) {
		t.Errorf("operator may publish\n%q\nwant exactly\n%q", p.PublishAllow, want)
	}
	if !slices.Equal(p.SubscribeAllow, []string{"_INBOX.>"}) {
		t.Errorf("operator may subscribe to %q, want only its inbox", p.SubscribeAllow)
	}
	for _, s := range p.PublishAllow {
		if strings.Contains(s, "*") || strings.Contains(s, "DELETE") || strings.Contains(s, "PURGE") {
			t.Errorf("operator may publish %q", s)
		}
	}
	for _, d := range []string{"$JS.API.STREAM.DELETE.>", "$JS.API.STREAM.PURGE.>", "$JS.API.STREAM.MSG.DELETE.>"} {
		if !slices.Contains(p.PublishDeny, d) {
			t.Errorf("operator's deny list lacks %q", d)
		}
	}
	if !slices.Contains(eventsv1.ServiceConsumers, eventsv1.ConsumerOperatorReportDeleted) {
		t.Errorf("%s is not reserved from other tools (ServiceConsumers %q)", eventsv1.ConsumerOperatorReportDeleted, eventsv1.ServiceConsumers)
	}
}

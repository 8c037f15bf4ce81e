package v1

// User is a NATS user of a Crowsnest deployment. Each component connects as
// its own user, and the server grants it only the subjects in Permissions.
type User string

// The NATS users. Reader is for other tools: it may read every event and
// make its own consumers, and publish nothing.
const (
	UserOperator   User = "operator"
	UserResultsAPI User = "results-api"
	UserMatcher    User = "matcher"
	UserNotifier   User = "notifier"
	UserReader     User = "reader"
)

// Users lists every user, in a stable order.
func Users() []User {
	return []User{UserOperator, UserResultsAPI, UserMatcher, UserNotifier, UserReader}
}

// Permission is one user's subject permissions, in nats-server's terms.
type Permission struct {
	PublishAllow   []string `json:"publishAllow"`
	PublishDeny    []string `json:"publishDeny"`
	SubscribeAllow []string `json:"subscribeAllow"`
}

// ConsumerOperatorReportDeleted is the operator's durable consumer of
// crowsnest.report.deleted: deletions published while the operator is away
// are delivered when it is back.
const ConsumerOperatorReportDeleted = "operator-report-deleted"

// ServiceConsumers are the durable consumer names the services own on the
// stream; other tools may not create, update or delete consumers by these
// names (a tool names its own consumers anything else).
var ServiceConsumers = []string{"results-api-scans", ConsumerResultsAPIInventory, ConsumerOperatorReportDeleted, ConsumerNotifier}

// ConsumerResultsAPIInventory is results-api's durable consumer of
// crowsnest.inventory.snapshot.
const ConsumerResultsAPIInventory = "results-api-inventory"

// ConsumerNotifier is the notifier's durable consumer of findings.changed,
// inventory.snapshot and job.done (several filter subjects, so nats.go
// creates it on $JS.API.CONSUMER.CREATE.CROWSNEST.notifier).
const ConsumerNotifier = "notifier"

// JetStream API subjects of the CROWSNEST stream (see the NATS JetStream
// wire API reference).
const (
	jsAPI           = "$JS.API."
	jsInfo          = jsAPI + "INFO"
	jsStreamInfo    = jsAPI + "STREAM.INFO." + StreamName
	jsStreamCreate  = jsAPI + "STREAM.CREATE." + StreamName
	jsStreamUpdate  = jsAPI + "STREAM.UPDATE." + StreamName
	jsStreamNames   = jsAPI + "STREAM.NAMES"
	jsStreamList    = jsAPI + "STREAM.LIST"
	jsConsumerAll   = jsAPI + "CONSUMER.*." + StreamName + ".>" // create, durable create, info, delete of a named consumer
	jsConsumerCreat = jsAPI + "CONSUMER.CREATE." + StreamName   // an unnamed (ephemeral) consumer
	jsConsumerNames = jsAPI + "CONSUMER.NAMES." + StreamName
	jsConsumerList  = jsAPI + "CONSUMER.LIST." + StreamName
	jsNext          = jsAPI + "CONSUMER.MSG.NEXT." + StreamName + ".>"
	jsAck           = "$JS.ACK." + StreamName + ".>"
	jsFlowControl   = "$JS.FC." + StreamName + ".>"
	inbox           = "_INBOX.>"
)

// denied to every user: no application may delete or purge the stream or
// its messages, or reach another stream's or the server's administration.
var denied = []string{
	jsAPI + "STREAM.DELETE.>", jsAPI + "STREAM.PURGE.>", jsAPI + "STREAM.MSG.DELETE.>",
	jsAPI + "STREAM.SNAPSHOT.>", jsAPI + "STREAM.RESTORE.>", jsAPI + "STREAM.PEER.>",
	jsAPI + "STREAM.LEADER.>", jsAPI + "META.>", jsAPI + "SERVER.>", "$SYS.>",
}

// consume is what a JetStream consumer of the stream needs: stream and
// consumer info, its own consumers, pull requests, acks, flow control.
var consume = []string{jsInfo, jsStreamInfo, jsStreamNames, jsStreamList, jsConsumerAll, jsConsumerCreat,
	jsConsumerNames, jsConsumerList, jsNext, jsAck, jsFlowControl}

// ensureStream is what a publisher that creates or updates the stream at
// start-up needs (EnsureStream).
var ensureStream = []string{jsInfo, jsStreamInfo, jsStreamCreate, jsStreamUpdate}

// ownConsumer is what a service needs to run its one durable pull consumer
// (name, with a single filter subject) and nothing more: create or update it
// (nats.go puts the filter subject in the create subject), read its info,
// pull and acknowledge its messages. No other consumer, no deletion.
func ownConsumer(name, filter string) []string {
	return []string{
		jsAPI + "CONSUMER.CREATE." + StreamName + "." + name + "." + filter,
		jsAPI + "CONSUMER.INFO." + StreamName + "." + name,
		jsAPI + "CONSUMER.MSG.NEXT." + StreamName + "." + name,
		"$JS.ACK." + StreamName + "." + name + ".>",
	}
}

// Permissions returns the subjects u may publish and subscribe to. An
// unknown user gets nothing.
func Permissions(u User) Permission {
	var pub, sub []string
	switch u {
	case UserOperator:
		pub = append(append(pub, SubjectImageNeeded, SubjectJobDone, SubjectInventorySnapshot), ensureStream...)
		// report.deleted, through its own durable consumer only: the
		// messages come to its inbox.
		pub = append(pub, ownConsumer(ConsumerOperatorReportDeleted, SubjectReportDeleted)...)
		sub = []string{inbox}
	case UserResultsAPI:
		pub = append(append(pub, "crowsnest.report.>", SubjectFindingsChanged), ensureStream...)
		pub = append(pub, consume...)         // the operator's events
		sub = []string{inbox, StreamSubjects} // every replica fans every event out to its WebSocket clients
	case UserMatcher:
		pub = append(append(pub, SubjectVulnDBUpdated, SubjectRematchDone), ensureStream...)
		pub = append(pub, consume...)
		sub = []string{inbox}
	case UserNotifier:
		pub = append(append(pub, consume...), jsAPI+"STREAM.INFO.KV_crowsnest-notifier", jsAPI+"STREAM.CREATE.KV_crowsnest-notifier",
			"$KV.crowsnest-notifier.>", jsAPI+"DIRECT.GET.KV_crowsnest-notifier.>", jsAPI+"CONSUMER.*.KV_crowsnest-notifier.>")
		sub = []string{inbox}
	case UserReader:
		pub = append(pub, consume...)
		sub = []string{inbox, StreamSubjects}
	default:
		return Permission{}
	}
	deny := append([]string{}, denied...)
	if u == UserReader || u == UserNotifier {
		// Readers publish no event, whatever the allow list grows to, and
		// cannot delete, replace or reconfigure the services' consumers.
		deny = append(deny, StreamSubjects, jsAPI+"CONSUMER.DELETE."+StreamName+".>")
		for _, c := range ServiceConsumers {
			if u == UserNotifier && c == ConsumerNotifier {
				continue // its own
			}
			deny = append(deny, jsAPI+"CONSUMER.CREATE."+StreamName+"."+c, jsAPI+"CONSUMER.CREATE."+StreamName+"."+c+".>",
				jsAPI+"CONSUMER.DURABLE.CREATE."+StreamName+"."+c)
		}
	}
	return Permission{PublishAllow: pub, PublishDeny: deny, SubscribeAllow: sub}
}

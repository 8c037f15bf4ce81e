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

// ConsumerResultsAPIScans is results-api's durable consumer of
// crowsnest.image.needed and crowsnest.job.done (the scan-status table).
const ConsumerResultsAPIScans = "results-api-scans"

// ConsumerResultsAPIInventory is results-api's durable consumer of
// crowsnest.inventory.snapshot.
const ConsumerResultsAPIInventory = "results-api-inventory"

// ConsumerResultsAPIVulnDB is results-api's durable consumer of
// crowsnest.vulndb.updated: the DB the matcher serves, for GET
// /api/v1/vulndb.
const ConsumerResultsAPIVulnDB = "results-api-vulndb"

// ConsumerNotifier is the notifier's durable consumer of findings.changed,
// inventory.snapshot and job.done (several filter subjects, so nats.go
// creates it on $JS.API.CONSUMER.CREATE.CROWSNEST.notifier).
const ConsumerNotifier = "notifier"

// ServiceConsumers are the durable consumer names the services own on the
// stream. No other user may create, read, pull from, acknowledge, pause,
// reset, unpin or delete a consumer by one of these names; a tool names its
// own consumers anything else. A service that adds a durable consumer adds
// its name here.
var ServiceConsumers = []string{ConsumerResultsAPIScans, ConsumerResultsAPIInventory, ConsumerResultsAPIVulnDB, ConsumerOperatorReportDeleted, ConsumerNotifier}

// JetStream API subjects of the CROWSNEST stream (see the NATS JetStream
// wire API reference, and nats-server's jetstream_api.go for the verbs).
const (
	jsAPI           = "$JS.API."
	jsInfo          = jsAPI + "INFO"
	jsStreamInfo    = jsAPI + "STREAM.INFO." + StreamName
	jsStreamCreate  = jsAPI + "STREAM.CREATE." + StreamName
	jsStreamUpdate  = jsAPI + "STREAM.UPDATE." + StreamName
	jsStreamNames   = jsAPI + "STREAM.NAMES"
	jsStreamList    = jsAPI + "STREAM.LIST"
	jsConsumer      = jsAPI + "CONSUMER."
	jsConsumerNames = jsConsumer + "NAMES." + StreamName
	jsConsumerList  = jsConsumer + "LIST." + StreamName
	inbox           = "_INBOX.>"
)

// denied to every user: no application may delete or purge the stream or
// its messages, or reach another stream's or the server's administration.
var denied = []string{
	jsAPI + "STREAM.DELETE.>", jsAPI + "STREAM.PURGE.>", jsAPI + "STREAM.MSG.DELETE.>",
	jsAPI + "STREAM.SNAPSHOT.>", jsAPI + "STREAM.RESTORE.>", jsAPI + "STREAM.PEER.>",
	jsAPI + "STREAM.LEADER.>", jsAPI + "META.>", jsAPI + "SERVER.>", "$SYS.>",
}

// ensureStream is what the stream's owner needs (EnsureStream: create, or
// update to the contract's configuration).
var ensureStream = []string{jsInfo, jsStreamInfo, jsStreamCreate, jsStreamUpdate}

// openStream is what the other publishers need (OpenStream: create a
// missing stream, never change one).
var openStream = []string{jsInfo, jsStreamInfo, jsStreamCreate}

// ownConsumer is what a service needs to run its one durable pull consumer
// and nothing more: create or update it (nats.go puts a single
// FilterSubject in the create subject; filter is "" for FilterSubjects),
// read its info, pull and acknowledge its messages. No other consumer, no
// deletion, pause or reset.
func ownConsumer(name, filter string) []string {
	create := jsConsumer + "CREATE." + StreamName + "." + name
	if filter != "" {
		create += "." + filter
	}
	return []string{
		create,
		jsConsumer + "INFO." + StreamName + "." + name,
		jsConsumer + "MSG.NEXT." + StreamName + "." + name,
		"$JS.ACK." + StreamName + "." + name + ".>",
	}
}

// toolConsumers is what a tool reading the stream needs (the reader, and
// the notifier, whose consumer name is configurable): look at the stream
// and list its consumers; create (named, with or without a filter, or
// server-named), read, pull from, acknowledge and delete consumers of its
// own. Not pause, reset, unpin or move them. Consumer names are one
// subject token, which NATS wildcards cannot split, so the services'
// consumers are taken out by name (serviceConsumerDeny).
var toolConsumers = []string{
	jsInfo, jsStreamInfo, jsStreamNames, jsStreamList, jsConsumerNames, jsConsumerList,
	jsConsumer + "CREATE." + StreamName,
	jsConsumer + "CREATE." + StreamName + ".*",
	jsConsumer + "CREATE." + StreamName + ".*.>",
	jsConsumer + "INFO." + StreamName + ".*",
	jsConsumer + "DELETE." + StreamName + ".*",
	jsConsumer + "MSG.NEXT." + StreamName + ".*",
	"$JS.ACK." + StreamName + ".*.>",
	"$JS.FC." + StreamName + ".*.>",
}

// serviceConsumerDeny refuses every JetStream API verb on the consumer
// name (one or two verb tokens before the stream, a filter after it), and
// its acks and flow control.
func serviceConsumerDeny(name string) []string {
	return []string{
		jsConsumer + "*." + StreamName + "." + name,
		jsConsumer + "*." + StreamName + "." + name + ".>",
		jsConsumer + "*.*." + StreamName + "." + name,
		"$JS.ACK." + StreamName + "." + name + ".>",
		"$JS.FC." + StreamName + "." + name + ".>",
	}
}

// Permissions returns the subjects u may publish and subscribe to. An
// unknown user gets nothing.
func Permissions(u User) Permission {
	var pub, sub []string
	stream := openStream
	if u == StreamOwner {
		stream = ensureStream
	}
	switch u {
	case UserOperator:
		pub = append(append(pub, SubjectImageNeeded, SubjectJobDone, SubjectInventorySnapshot), stream...)
		// report.deleted, through its own durable consumer only: the
		// messages come to its inbox.
		pub = append(pub, ownConsumer(ConsumerOperatorReportDeleted, SubjectReportDeleted)...)
		sub = []string{inbox}
	case UserResultsAPI:
		pub = append(append(pub, "crowsnest.report.>", SubjectFindingsChanged), stream...)
		// The operator's events and the matcher's DB announcements,
		// through its three durable consumers (each sets FilterSubjects).
		pub = append(pub, ownConsumer(ConsumerResultsAPIScans, "")...)
		pub = append(pub, ownConsumer(ConsumerResultsAPIInventory, "")...)
		pub = append(pub, ownConsumer(ConsumerResultsAPIVulnDB, "")...)
		sub = []string{inbox, StreamSubjects} // every replica fans every event out to its WebSocket clients
	case UserMatcher:
		pub = append(append(pub, SubjectVulnDBUpdated, SubjectRematchDone), stream...)
		sub = []string{inbox}
	case UserNotifier:
		pub = append(append(pub, toolConsumers...), jsAPI+"STREAM.INFO.KV_crowsnest-notifier", jsAPI+"STREAM.CREATE.KV_crowsnest-notifier",
			"$KV.crowsnest-notifier.>", jsAPI+"DIRECT.GET.KV_crowsnest-notifier.>", jsAPI+"CONSUMER.*.KV_crowsnest-notifier.>")
		sub = []string{inbox}
	case UserReader:
		pub = append(pub, toolConsumers...)
		sub = []string{inbox, StreamSubjects}
	default:
		return Permission{}
	}
	deny := append([]string{}, denied...)
	if u == UserReader || u == UserNotifier {
		// Readers publish no event, whatever the allow list grows to.
		deny = append(deny, StreamSubjects)
	}
	// Nobody touches another service's consumer. The allow lists of the
	// services name only their own; the deny list holds even if one grows.
	for _, c := range ServiceConsumers {
		if owns(u, c) {
			continue
		}
		deny = append(deny, serviceConsumerDeny(c)...)
	}
	return Permission{PublishAllow: pub, PublishDeny: deny, SubscribeAllow: sub}
}

// owns reports whether the durable consumer named c is u's.
func owns(u User, c string) bool {
	switch c {
	case ConsumerOperatorReportDeleted:
		return u == UserOperator
	case ConsumerResultsAPIScans, ConsumerResultsAPIInventory, ConsumerResultsAPIVulnDB:
		return u == UserResultsAPI
	case ConsumerNotifier:
		return u == UserNotifier
	}
	return false
}

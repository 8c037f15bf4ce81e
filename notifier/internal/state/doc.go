// Package state keeps the notifier's state in a NATS KeyValue bucket, so a
// restart neither loses nor repeats a notification:
//
//	done.<h>      an event already handled (per-key TTL), h hashes its id
//	inv.<ns>      a namespace's latest inventory: digest → workloads, labels
//	crit.<hex>    a digest's current critical findings (count and, when
//	              findings.changed listed them, which)
//	fail.<ns>     recent failed scans in a namespace
//	open          every route's open group (the debounce windows) and the
//	              event ids of recently sealed groups, in one key so that
//	              one event's items reach every route in one atomic write
//	sealed.<id>   a group whose window closed, waiting for its receiver;
//	              deleted once the receiver accepted it
package state

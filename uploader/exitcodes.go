package main

// Exit codes: the scan Job's outcome. The operator maps them to a failure
// reason; they are part of Crowsnest's public contract (docs/uploader.md).
const (
	ExitOK            = 0 // report stored (201 created or 200 replaced)
	ExitFailure       = 1 // unexpected internal error
	ExitUsage         = 2 // bad flags or environment
	ExitInvalidReport = 3 // report missing, unreadable, too large or not CycloneDX JSON
	ExitRejected      = 4 // results-api answered 4xx (auth, bad digest, bad BOM, too large)
	ExitUnreachable   = 5 // results-api unreachable or 5xx until attempts or deadline ran out
	ExitTokenInvalid  = 6 // token file missing, unreadable or empty
)

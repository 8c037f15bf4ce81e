// A tiny program compiled into the "gobinary" fixture image. It pins
// golang.org/x modules at versions with published advisories on purpose:
// its only job is to carry their Go build info for Grype to find.
module example.com/crowsnest/vulnerable-app

go 1.26.0

require (
	golang.org/x/crypto v0.14.0
	golang.org/x/net v0.15.0
	golang.org/x/text v0.13.0
)

require golang.org/x/sys v0.13.0 // indirect

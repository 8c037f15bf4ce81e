// Package export renders findings in the formats of the tools people
// already use: SARIF 2.1.0 (GitHub code scanning, IDEs) and CSV
// (spreadsheets). Both writers stream: they take one rule, finding or row
// at a time and hold no more than a buffer, so a 50,000-finding report is
// never one string in memory. They know nothing of HTTP or the store.
package export

// Package output prints what the plugin read the way kubectl prints
// objects: aligned tables with upper-case headers by default, more columns
// with -o wide, and the data itself with -o json or -o yaml.
package output

// Package sink connects hostlog to the host-log import of the contract
// version the plugin is built for (set by internal/v01 or internal/v02 in
// a component; nil in native builds, where hostlog prints and captures).
package sink

// Log sends one line to the host: level is the host-log enum's case.
var Log func(level uint32, message string)

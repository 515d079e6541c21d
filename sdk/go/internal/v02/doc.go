// Package v02 is the part of a contract 0.2 component that every world
// shares: the host-log import and the meta exports (describe,
// validate-config). Role packages of 0.2 import it in their wasip1 files.
package v02

// Package v01 is the part of a contract 0.1 component that every world
// shares: the host-log import and the meta exports (describe,
// validate-config). Role packages of 0.1 import it in their wasip1 files.
package v01

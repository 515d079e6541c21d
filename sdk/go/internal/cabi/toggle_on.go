//go:build wasip1 && !syncweave_nogctoggle

package cabi

const gcToggle = true

// Package release holds no code: its tests check the release tooling,
// scripts/release.sh's npm packages (scripts/npm) in particular, by building
// this machine's packages, installing them with npm offline and running the
// installed command, and the packages' Node launcher, run with node against
// a fake native binary.
package release

// Package assets holds the files the server embeds: the web UI's templates and
// static assets, and the built userscripts.
package assets

import "embed"

// Userscripts are the built panel scripts (userscripts/build.mjs writes them),
// served at /userscripts/<name>.user.js with the deployment's URL written in.
//
//go:embed userscripts/*.user.js
var Userscripts embed.FS

package web

import "github.com/go-chi/chi/v5"

// Routes are the UI's routes, for walking them (chi.Walk): the handler the
// UI mounts wraps them in a cross-origin guard that hides them from a walk
// of the parent router. Tests that must see every route of the deployment
// (the auth matrix) walk these too.
func (u *UI) Routes() chi.Routes { return u.mux }

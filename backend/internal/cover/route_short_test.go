package cover

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/imagetype"
	"github.com/lectern-reader/lectern/backend/internal/imagetype/imagetest"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// nameCover records address as the Cover of a new Series, as a finished
// Cover job does: the rows that name Covers are what short references find.
func nameCover(t *testing.T, st *store.Store, key, address, typ string) {
	t.Helper()
	_, err := st.Pool.Exec(context.Background(), `
		INSERT INTO series (key, site, kind, series_url, cover_address, cover_type)
		VALUES ($1, 'asura', 'manga', 'https://asuracomic.net/series/' || $1, $2, $3)`, key, address, typ)
	require.NoError(t, err)
}

func TestShortAndLongCoverURLsServeTheSameCover(t *testing.T) {
	t.Parallel()
	st := store.New(pgtest.New(t))
	rb := setupRoute(t, t.TempDir(), "")
	h := NewHandler(rb.store)
	h.Covers = st
	r := chi.NewRouter()
	r.Handle("/covers/{address}", h)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	rb.srv = srv

	img := imagetest.PNG(t, 5_000)
	addr, err := rb.store.Put(context.Background(), img, imagetype.TypePNG)
	require.NoError(t, err)
	nameCover(t, st, "asura:one", addr, imagetype.TypePNG)

	short := ShortURL("https://lectern.example", addr, imagetype.TypePNG)
	require.Equal(t, "https://lectern.example/covers/"+addr[:ShortLen]+".png", short)
	require.Equal(t, "https://lectern.example/covers/"+addr+".png", URL("https://lectern.example", addr, imagetype.TypePNG))

	for _, path := range []string{"/covers/" + addr, "/covers/" + addr + ".png", "/covers/" + addr[:ShortLen], "/covers/" + addr[:ShortLen] + ".png"} {
		resp, body := rb.do(t, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Equal(t, img, body, path)
		require.Equal(t, `"`+addr+`"`, resp.Header.Get("ETag"), path)
		require.Equal(t, "public, max-age=31536000, immutable", resp.Header.Get("Cache-Control"), path)
		require.Equal(t, imagetype.TypePNG, resp.Header.Get("Content-Type"), path)
		// Revalidation answers by the full address either way.
		resp, _ = rb.do(t, http.MethodGet, path, http.Header{"If-None-Match": {`"` + addr + `"`}})
		require.Equal(t, http.StatusNotModified, resp.StatusCode, path)
	}
	// A short reference with the wrong extension is as unknown as a long one.
	resp, _ := rb.do(t, http.MethodGet, "/covers/"+addr[:ShortLen]+".jpg", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestShortCoverReferenceNeverGuesses(t *testing.T) {
	t.Parallel()
	st := store.New(pgtest.New(t))
	dir := t.TempDir()
	covers := &blob.FS{Dir: dir}
	h := NewHandler(covers)
	h.Covers = st
	r := chi.NewRouter()
	r.Handle("/covers/{address}", h)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	rb := &routeBundle{dir: dir, store: covers, srv: srv}

	// Two stored Covers whose addresses share their first 20 digits (made
	// up: finding a real pair would take 2^40 hashes). Both exist as bytes,
	// so only the ambiguity can refuse them.
	img := imagetest.PNG(t, 3_000)
	stored, err := covers.Put(context.Background(), img, imagetype.TypePNG)
	require.NoError(t, err)
	twin := stored[:ShortLen] + strings.Repeat("0", 64-ShortLen)
	if twin == stored {
		twin = stored[:ShortLen] + strings.Repeat("1", 64-ShortLen)
	}
	nameCover(t, st, "asura:one", stored, imagetype.TypePNG)
	nameCover(t, st, "asura:two", twin, imagetype.TypePNG)
	// The same Cover on a second Series is still one Cover.
	nameCover(t, st, "asura:three", stored, imagetype.TypePNG)

	resp, body := rb.do(t, http.MethodGet, "/covers/"+stored[:ShortLen]+".png", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "an ambiguous prefix is refused, never guessed")
	require.JSONEq(t, `{"error":"cover not found"}`, string(body))
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	// The full address still serves.
	resp, _ = rb.do(t, http.MethodGet, "/covers/"+stored+".png", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// A prefix that no Series names is unknown, even with bytes on the
	// volume that start so: the rows decide, not the blob store.
	orphan := imagetest.JPEG(t, 4_000)
	orphanAddr, err := covers.Put(context.Background(), orphan, imagetype.TypeJPEG)
	require.NoError(t, err)
	for _, path := range []string{
		"/covers/" + orphanAddr[:ShortLen],
		"/covers/" + strings.Repeat("f", ShortLen) + ".png",
		"/covers/" + stored[:ShortLen-1], // neither short nor long
		"/covers/" + stored[:ShortLen+1], // neither short nor long
		"/covers/" + strings.ToUpper(stored[:ShortLen]),
	} {
		resp, _ := rb.do(t, http.MethodGet, path, nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
	}

	// Without a Finder (a route over bytes only) no short reference serves.
	bare := setupRoute(t, dir, "")
	resp, _ = bare.do(t, http.MethodGet, "/covers/"+stored[:ShortLen], nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

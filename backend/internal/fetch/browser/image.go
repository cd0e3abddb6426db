package browser

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/chromedp/chromedp"
)

// imageResult is what the in-page fetch hands back.
type imageResult struct {
	Status   int    `json:"status"`
	Type     string `json:"type"`
	URL      string `json:"url"`
	B64      string `json:"b64"`
	TooLarge bool   `json:"tooLarge"`
}

// fetchImageJS fetches an image from inside the page, so the request carries
// the page's origin and its clearance cookie (kagane serves Cover bytes with
// cross-origin-resource-policy: same-origin behind its challenge). The cap is
// enforced while streaming, so no more than max bytes ever cross DevTools.
const fetchImageJS = `(async (url, max) => {
  const r = await fetch(url, {credentials: 'include', cache: 'no-store', redirect: 'follow'});
  const out = {status: r.status, type: r.headers.get('content-type') || '', url: r.url, b64: '', tooLarge: false};
  if (!r.ok) { try { await r.body.cancel(); } catch (e) {} return out; }
  const declared = Number(r.headers.get('content-length') || '0');
  if (declared > max) { try { await r.body.cancel(); } catch (e) {} out.tooLarge = true; return out; }
  const reader = r.body.getReader();
  const chunks = [];
  let n = 0;
  for (;;) {
    const {done, value} = await reader.read();
    if (done) break;
    n += value.length;
    if (n > max) { try { await reader.cancel(); } catch (e) {} out.tooLarge = true; return out; }
    chunks.push(value);
  }
  const all = new Uint8Array(n);
  let off = 0;
  for (const c of chunks) { all.set(c, off); off += c.length; }
  let bin = '';
  for (let i = 0; i < all.length; i += 0x8000) bin += String.fromCharCode.apply(null, all.subarray(i, i + 0x8000));
  out.b64 = btoa(bin);
  return out;
})(%s, %d)`

// FetchImage loads pageURL in a tab, lets its challenge clear, and fetches
// imageURL from inside the page, for image bytes that only a cleared,
// same-origin page may read. Both URLs must be https on one of hosts, and so
// must the image response after redirects. The bytes are capped at maxBytes
// (ErrTooLarge). A challenge status (401, 403, 429, 503) is re-read until ctx
// ends (then ErrChallenge); any other non-2xx fails at once. The content type
// is the response's; deciding whether the bytes are an image is the caller's.
func (b *Browser) FetchImage(ctx context.Context, pageURL, imageURL string, hosts []string, maxBytes int64) ([]byte, string, error) {
	if !b.Enabled() {
		return nil, "", ErrNoBrowser
	}
	if maxBytes <= 0 {
		return nil, "", fmt.Errorf("browser fetch image: the byte cap must be positive, got %d", maxBytes)
	}
	iu, err := pinned(imageURL, hosts)
	if err != nil {
		return nil, "", fmt.Errorf("browser fetch image: %w", err)
	}
	arg, err := json.Marshal(iu.String())
	if err != nil {
		return nil, "", fmt.Errorf("browser fetch image: %w", err)
	}
	script := fmt.Sprintf(fetchImageJS, arg, maxBytes)

	var data []byte
	var ctype string
	err = b.withTab(ctx, pageURL, hosts, func(tabCtx context.Context) (bool, error) {
		res, err := chromedp.Run(tabCtx, chromedp.Evaluate[imageResult](script, chromedp.EvalAwaitPromise))
		if err != nil {
			return false, err
		}
		if res.URL != "" {
			if _, err := pinned(res.URL, hosts); err != nil {
				return false, fatal{fmt.Errorf("image %s redirected: %w", redact(iu), err)}
			}
		}
		if res.TooLarge {
			return false, fatal{fmt.Errorf("image %s: %w (%d bytes)", redact(iu), ErrTooLarge, maxBytes)}
		}
		switch {
		case res.Status >= 200 && res.Status < 300:
		case res.Status == http.StatusUnauthorized, res.Status == http.StatusForbidden,
			res.Status == http.StatusTooManyRequests, res.Status == http.StatusServiceUnavailable:
			return false, nil // behind the challenge still: re-read
		default:
			return false, fatal{fmt.Errorf("image %s: status %d", redact(iu), res.Status)}
		}
		// Base64 of maxBytes is at most 4*ceil(maxBytes/3) characters; checked
		// before decoding so a misbehaving page cannot make us allocate more.
		if int64(len(res.B64)) > 4*((maxBytes+2)/3) {
			return false, fatal{fmt.Errorf("image %s: %w (%d bytes)", redact(iu), ErrTooLarge, maxBytes)}
		}
		raw, err := base64.StdEncoding.DecodeString(res.B64)
		if err != nil {
			return false, fatal{fmt.Errorf("image %s: decode bytes from the page: %w", redact(iu), err)}
		}
		if int64(len(raw)) > maxBytes {
			return false, fatal{fmt.Errorf("image %s: %w (%d bytes)", redact(iu), ErrTooLarge, maxBytes)}
		}
		if len(raw) == 0 {
			return false, fatal{errors.New("image " + redact(iu) + ": empty body")}
		}
		data, ctype = raw, res.Type
		return true, nil
	})
	if err != nil {
		return nil, "", err
	}
	return data, ctype, nil
}

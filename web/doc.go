// Package web fetches pages and searches the web on an agent's behalf,
// with every connection - every redirect hop included - made through the
// guarded dialer of package netpolicy.
//
// # Fetch
//
// A Fetcher keeps the transport hygiene of the reference harness's HTTP
// fetcher and adds the defence it lacked, so fetch can be on by default:
//
//   - URL: the raw string is at most 2048 bytes, then it must parse, be
//     http or https (WEB_INVALID_URL otherwise) and carry no user info
//     (WEB_BLOCKED_URL).
//   - GET only, a fixed Accept header, no cookies, no credentials, no
//     proxy from the environment.
//   - Redirects (301, 302, 303, 307, 308) are followed by Fetch itself:
//     the hop budget (5) is checked first, then the Location is resolved
//     against the current URL, validated like a new URL and required to
//     be same-origin unless FetchOptions.CrossOriginRedirects is set.
//   - Where a hop may connect is decided by the netpolicy.Dialer at dial
//     time: it resolves the name, refuses it if any address is forbidden,
//     dials only the checked address and re-checks it just before
//     connect(2). Under the web default policy (public addresses, ports
//     80 and 443) private, loopback, link-local and cloud metadata
//     addresses are refused in every spelling, and DNS rebinding between
//     hops gains nothing. A refusal is NET_DENIED with the policy's reason.
//   - Content: text/html and application/xhtml+xml are HTML; other text/*,
//     JSON and XML (including +json, +xml) are text; anything else, or an
//     unknown charset, fails before the body is read.
//   - Charset: a byte-order mark, else the Content-Type's charset, else
//     an HTML <meta charset> in the first 1024 bytes, else UTF-8.
//   - Size: a Content-Length over 5,000,000 bytes fails; a longer body is
//     cut there and marked truncated; the decoded text is capped at
//     100,000 characters. Caps count code points and never split one.
//   - Time: 30 s for the whole fetch, body included (WEB_FETCH_TIMEOUT);
//     the caller's cancellation is WEB_ABORTED, told apart by cause.
//   - A non-2xx status is a Result, not an error.
//
// Format renders a Result as the web_fetch tool shows it: a "Fetched <url>
// (HTTP <code>)" header, the body as Markdown (ToMarkdown: script, style
// and noscript dropped; a document nested deeper than 512 elements is
// returned as it came), a footer when anything was cut, and at most
// 200,000 characters in all.
//
// # Search
//
// A Registry holds search Providers and picks one per call: the
// configured id (an unknown or unusable one is an error, never a
// fallback), else the only usable provider, else a typed error; never
// registration order. SearXNG (its JSON API) and Brave (the Brave Search
// API, key from the environment) are the shipped providers. One call runs
// 1 to 4 queries (duplicates once), merges their hits round-robin by rank,
// drops repeated URLs and keeps 8.
//
// Every failure is an *Error with a Code (WEB_INVALID_URL, NET_DENIED,
// WEB_PROVIDER_AMBIGUOUS, ...).
package web

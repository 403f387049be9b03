package web

import (
	"bytes"
	"mime"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
)

// Kind is the closed union of fetched bodies.
type Kind string

const (
	KindHTML Kind = "html"
	KindText Kind = "text"
)

// contentType is what the Content-Type header says about a body.
type contentType struct {
	kind Kind
	// enc is the declared charset's decoder; nil when none was declared.
	enc     encoding.Encoding
	encName string
}

// classify maps a Content-Type header to a body kind and declared charset.
// It runs before the body is read, so an unsupported type or an unknown
// charset costs no download.
func classify(header string) (contentType, *Error) {
	if strings.TrimSpace(header) == "" {
		return contentType{}, newError(CodeUnsupportedContent, "", "the response has no Content-Type; only text, HTML, JSON and XML can be fetched")
	}
	mt, params, err := mime.ParseMediaType(header)
	if err != nil {
		return contentType{}, wrapError(CodeUnsupportedContent, "", err, "cannot parse Content-Type %q", header)
	}
	var ct contentType
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		ct.kind = KindHTML
	case strings.HasPrefix(mt, "text/"),
		mt == "application/json", mt == "application/xml",
		strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		ct.kind = KindText
	default:
		return contentType{}, newError(CodeUnsupportedContent, "", "Content-Type %q is not text; only text/*, HTML, JSON and XML can be fetched", mt)
	}
	if label, ok := params["charset"]; ok {
		enc, name := charset.Lookup(label)
		if enc == nil {
			return contentType{}, newError(CodeUnsupportedContent, "", "charset %q of Content-Type %q is not a known encoding", label, header)
		}
		ct.enc, ct.encName = enc, name
	}
	return ct, nil
}

// metaScanBytes is how far into an HTML body a <meta charset> counts,
// as in the HTML standard's prescan.
const metaScanBytes = 1024

// decodeBody turns body bytes into UTF-8 text. The charset is, in order:
// a byte-order mark, the Content-Type's charset, an HTML <meta charset>
// (or http-equiv Content-Type) in the first 1024 bytes, else UTF-8.
// Invalid sequences become U+FFFD. cut says the byte cap cut the body, so
// a character split at the end is dropped rather than shown as U+FFFD.
func decodeBody(body []byte, ct contentType, cut bool) string {
	enc, name := ct.enc, ct.encName
	if e, n, certain := charset.DetermineEncoding(body, ""); certain {
		enc, name = e, n // BOM: the HTML standard lets it override the header
	}
	if enc == nil && ct.kind == KindHTML {
		enc, name = metaCharset(body)
	}
	// charset.Lookup wraps every encoding, so UTF-8 is known by its name.
	if enc == nil || name == "utf-8" {
		body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
		if cut {
			body = trimPartialRune(body)
		}
		if utf8.Valid(body) {
			return string(body) // the common case: one copy, no rewrite
		}
		return strings.ToValidUTF8(string(body), "\uFFFD")
	}
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		// x/text decoders replace bad input; an error here is not
		// expected. Fall back to the bytes as UTF-8 rather than fail.
		return strings.ToValidUTF8(string(body), "\uFFFD")
	}
	out = bytes.TrimPrefix(out, []byte("\uFEFF")) // a BOM is not content
	if cut {
		// A multi-byte legacy character cut by the byte cap decodes to
		// one trailing replacement character.
		out = bytes.TrimSuffix(out, []byte("\uFFFD"))
	}
	return strings.ToValidUTF8(string(out), "\uFFFD")
}

// metaCharset finds the charset an HTML document declares for itself in
// its first 1024 bytes, and its canonical name; nil if none.
func metaCharset(body []byte) (encoding.Encoding, string) {
	if len(body) > metaScanBytes {
		body = body[:metaScanBytes]
	}
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return nil, ""
		case html.StartTagToken, html.SelfClosingTagToken:
			tag, hasAttr := z.TagName()
			if string(tag) != "meta" {
				continue
			}
			var label, content string
			pragma := false
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				switch strings.ToLower(string(k)) {
				case "charset":
					label = string(v)
				case "http-equiv":
					pragma = strings.EqualFold(string(v), "content-type")
				case "content":
					content = string(v)
				}
			}
			if label == "" && pragma {
				if _, params, err := mime.ParseMediaType(content); err == nil {
					label = params["charset"]
				}
			}
			if label == "" {
				continue
			}
			enc, name := charset.Lookup(label)
			if enc == nil {
				continue // unknown label: keep looking, then UTF-8
			}
			if strings.HasPrefix(name, "utf-16") {
				// A document that could be parsed as ASCII to find this
				// tag is not UTF-16; the standard says use UTF-8.
				return encoding.Nop, "utf-8"
			}
			return enc, name
		}
	}
}

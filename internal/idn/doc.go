// Package idn writes internationalised domain names the way net/http
// dials them, with the IDNA lookup profile of golang.org/x/net/idna that
// net/http itself applies. netpolicy takes names in ASCII only (it
// imports nothing beyond the standard library), so dsh converts what
// users type — policy entries and the targets of dsh policy check — here,
// before they reach it: "bücher.example" is judged, allowed and denied as
// "xn--bcher-kva.example", the name net/http connects to.
package idn

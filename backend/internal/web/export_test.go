package web

// Ago is ago, for the black-box tests that check a page's relative times.
var Ago = ago

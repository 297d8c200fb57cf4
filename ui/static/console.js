// Relay console: the copy button of a freshly minted relay key. Loaded with
// the page's CSP nonce; no inline handlers anywhere.
document.addEventListener("click", function (ev) {
  var b = ev.target.closest("[data-copy]");
  if (!b) return;
  var el = document.getElementById(b.getAttribute("data-copy"));
  if (!el) return;
  el.select();
  var done = function () { b.textContent = "Copied"; };
  if (navigator.clipboard) {
    navigator.clipboard.writeText(el.value).then(done, function () { document.execCommand("copy"); done(); });
  } else {
    document.execCommand("copy");
    done();
  }
});

/* nextword book: open a folded audit section (nextword.booktools.rendering) when a link points into it, and
   open every one before printing from the browser (the PDF edition is unfolded anyway). */
(function () {
  function openTarget() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var target = id && document.getElementById(id);
    for (var node = target; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") { node.open = true; }
      if (node.tagName === "SECTION" && node.classList.contains("nextword-folded")) {
        var fold = node.querySelector(":scope > details.nextword-fold");
        if (fold) { fold.open = true; }
      }
    }
    if (target) { target.scrollIntoView(); }
  }
  window.addEventListener("hashchange", openTarget);
  document.addEventListener("DOMContentLoaded", function () { if (window.location.hash) { openTarget(); } });
  window.addEventListener("beforeprint", function () {
    document.querySelectorAll("details.nextword-fold").forEach(function (d) { d.open = true; });
  });
})();
